#!/usr/bin/env node
// Idle operators' resident memory: a local control plane (@kanri/testenv), then, one at a time,
// (1) a minimal operator watching only its own kind with one object of it (idle-operator-child.mjs)
// and (2) the PostgreSQL operator (packages/postgres/dist/src/operator/main.js) with no cluster to
// manage. Each runs for BENCH_IDLE_SECONDS (default 60) after it started; its RSS is sampled every
// second from /proc and the median of the last half and the peak (VmHWM) are reported.
// Last stdout line: one JSON object. Usage: node bench/memory/idle-operator.mjs
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { websiteCrd } from '../../examples/dist/03-website-operator/website-crd.js';
import { KubeClient } from '../../packages/client/dist/src/index.js';
import { PostgresClusterResource } from '../../packages/postgres/dist/src/index.js';
import { startControlPlane } from '../../packages/testenv/dist/src/index.js';
import { median, memoryOf, runMetadata, toMiB } from './lib.mjs';

const log = (message) => console.error(`[idle-operator] ${message}`);
const SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);

/** Runs `node <script>` for SECONDS and samples its RSS; the process is stopped by PID afterwards. */
export async function sampleProcess(label, script, env, seconds = SECONDS) {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const samples = [];
  const privates = [];
  let peak = 0;
  try {
    for (let i = 0; i < seconds; i++) {
      await sleep(1_000);
      const m = memoryOf(child.pid);
      if (!m || child.exitCode !== null) throw new Error(`${label} exited early:\n${stderr}`);
      samples.push(m.rss);
      privates.push(m.private);
      peak = m.hwm;
    }
  } finally {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  const result = {
    rssMiB: toMiB(median(samples.slice(Math.floor(samples.length / 2)))),
    lastMiB: toMiB(samples.at(-1)),
    privateMiB: toMiB(median(privates.slice(Math.floor(privates.length / 2)))),
    peakMiB: toMiB(peak),
    seconds,
  };
  log(`${label}: ${JSON.stringify(result)}`);
  return result;
}

export async function idleOperators() {
  const cp = await startControlPlane();
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  try {
    const crds = client.resource('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
    await crds.create(websiteCrd);
    await crds.create(PostgresClusterResource.crd);
    const websites = client.resource('example.kanri.dev/v1', 'Website');
    for (let i = 0; ; i++) {
      try {
        await websites.create({ metadata: { name: 'hello', namespace: 'default' }, spec: { html: '<h1>hi</h1>' } });
        break;
      } catch (error) {
        if (i > 100) throw error;
        await sleep(200); // the CRD is not served yet
      }
    }
    const env = { KUBECONFIG: cp.kubeconfigPath, POD_NAMESPACE: 'default' };
    const minimal = await sampleProcess(
      'minimal operator',
      fileURLToPath(new URL('idle-operator-child.mjs', import.meta.url)),
      env,
    );
    const postgres = await sampleProcess(
      'PostgreSQL operator',
      fileURLToPath(new URL('../../packages/postgres/dist/src/operator/main.js', import.meta.url)),
      { ...env, KANRI_BIND_ADDRESS: '127.0.0.1:0', KANRI_CRD_DELETION_GUARD: 'false' },
    );
    return { minimal, postgres };
  } finally {
    await client.close();
    await cp.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await idleOperators();
  console.log(JSON.stringify({ ...runMetadata(), idleOperator: result }));
}
