#!/usr/bin/env node
// The PostgreSQL operator's memory with many unrelated Secrets in the cluster (issue 16, finding
// 7): a local control plane holding BENCH_SECRETS (default 10,000) Secrets of 1 KiB that belong to
// no Kanri cluster, then the operator with its Secret informer filtered to its clusters' Secrets
// (as shipped) and unfiltered (BENCH_CACHE_ALL=1, as before), alternating, BENCH_TRIALS (default 2)
// times each. RSS is sampled every second for BENCH_IDLE_SECONDS (default 40) from /proc.
// Last stdout line: one JSON object. Usage: node bench/memory/operator-secrets.mjs
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../packages/client/dist/src/index.js';
import { PostgresBackupResource, PostgresClusterResource } from '../../packages/postgres/dist/src/index.js';
import { startControlPlane } from '../../packages/testenv/dist/src/index.js';
import { sampleProcess } from './idle-operator.mjs';
import { median, runMetadata } from './lib.mjs';

const round1 = (x) => Math.round(x * 10) / 10;

const log = (message) => console.error(`[operator-secrets] ${message}`);
const SECRETS = Number(process.env.BENCH_SECRETS ?? 10_000);
const TRIALS = Number(process.env.BENCH_TRIALS ?? 2);
const SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 40);
const child = fileURLToPath(new URL('operator-secrets-child.mjs', import.meta.url));

export async function operatorWithSecrets() {
  const cp = await startControlPlane();
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  try {
    const crds = client.resource('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
    for (const resource of [PostgresClusterResource, PostgresBackupResource]) await crds.create(resource.crd);
    await client.resource('v1', 'Namespace').create({ metadata: { name: 'apps' } });
    const secrets = client.resource('v1', 'Secret');
    const started = Date.now();
    for (let i = 0; i < SECRETS; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, SECRETS - i) }, (_, j) =>
          secrets.create({
            metadata: { name: `app-${i + j}`, namespace: 'apps', labels: { app: 'unrelated' } },
            stringData: { token: randomBytes(512).toString('hex') },
          }),
        ),
      );
      if ((i / 50) % 40 === 0) log(`${i}/${SECRETS} Secrets (${Math.round((Date.now() - started) / 1000)} s)`);
    }
    const env = {
      KUBECONFIG: cp.kubeconfigPath,
      POD_NAMESPACE: 'default',
      KANRI_BIND_ADDRESS: '127.0.0.1:0',
      KANRI_CRD_DELETION_GUARD: 'false',
      KANRI_LOG_LEVEL: 'warn',
    };
    const runs = { filtered: [], unfiltered: [] };
    for (let t = 0; t < TRIALS; t++) {
      for (const mode of t % 2 === 0 ? ['filtered', 'unfiltered'] : ['unfiltered', 'filtered']) {
        const extra = mode === 'unfiltered' ? { BENCH_CACHE_ALL: '1' } : {};
        runs[mode].push(await sampleProcess(`${mode} (trial ${t + 1})`, child, { ...env, ...extra }, SECONDS));
      }
    }
    const summary = (rows) => ({
      trials: rows,
      medianRssMiB: round1(median(rows.map((r) => r.rssMiB))),
      medianPeakMiB: round1(median(rows.map((r) => r.peakMiB))),
    });
    const result = { secrets: SECRETS, filtered: summary(runs.filtered), unfiltered: summary(runs.unfiltered) };
    log(
      `${SECRETS} unrelated Secrets: filtered ${result.filtered.medianRssMiB} MiB RSS (peak ${result.filtered.medianPeakMiB}), unfiltered ${result.unfiltered.medianRssMiB} MiB (peak ${result.unfiltered.medianPeakMiB})`,
    );
    return result;
  } finally {
    await client.close();
    await cp.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await operatorWithSecrets();
  console.log(JSON.stringify({ ...runMetadata(), operatorSecrets: result }));
}
