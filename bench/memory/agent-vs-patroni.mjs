#!/usr/bin/env node
// The per-member high-availability process beside each PostgreSQL: Kanri's instance agent against
// Patroni (Debian's package, started by bench/failover/patroni.mjs). Each side runs a healthy
// three-member cluster of PostgreSQL 15 (a primary streaming to two replicas), then the RSS of each
// member's agent or Patroni process (not postgres) is sampled every second for BENCH_HA_SECONDS
// (default 30). The agents are started as packages/postgres/test/agent.test.ts starts them (the
// fixture in dist). Last stdout line: one JSON object.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../packages/client/dist/src/index.js';
import { buildInstanceRoleRules } from '../../packages/postgres/dist/src/contract/index.js';
import {
  createClusterObjects,
  kubeconfigForAgents,
  makePassword,
  randomPodIPs,
  startAgent,
  stopAgent,
} from '../../packages/postgres/dist/test/fixtures/agent-cluster.js';
import { startControlPlane, waitFor } from '../../packages/testenv/dist/src/index.js';
import { startPatroniSystem } from '../failover/patroni.mjs';
import { descendants, killAllGroups } from '../failover/processes.mjs';
import { median, memoryOf, runMetadata, toMiB } from './lib.mjs';

const log = (message) => console.error(`[agent-vs-patroni] ${message}`);
const SECONDS = Number(process.env.BENCH_HA_SECONDS ?? 30);

/** Samples each PID's RSS every second; per PID the median of the samples and its peak. */
async function sample(pids, seconds = SECONDS) {
  const samples = pids.map(() => []);
  const privates = pids.map(() => []);
  const peaks = pids.map(() => 0);
  for (let s = 0; s < seconds; s++) {
    await sleep(1_000);
    pids.forEach((pid, i) => {
      const m = memoryOf(pid);
      if (!m) throw new Error(`process ${pid} is gone`);
      samples[i].push(m.rss);
      privates[i].push(m.private);
      peaks[i] = m.hwm;
    });
  }
  return pids.map((_, i) => ({
    rssMiB: toMiB(median(samples[i])),
    privateMiB: toMiB(median(privates[i])),
    peakMiB: toMiB(peaks[i]),
  }));
}

export async function measureAgents() {
  const cp = await startControlPlane();
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  const root = mkdtempSync(join(tmpdir(), 'kanri-bench-memory-agent-'));
  chmodSync(root, 0o711);
  const agents = [];
  try {
    const [namespace, cluster, pods, ips] = ['pg', 'demo', ['demo-a-0', 'demo-a-1', 'demo-a-2'], randomPodIPs(3)];
    const superuser = makePassword('s');
    const replication = makePassword('r');
    const agentUser = await cp.addUser({ name: 'instance-agent' });
    const kubeconfig = kubeconfigForAgents(root, agentUser.kubeconfigPath);
    await createClusterObjects(client, { namespace, cluster, pods: pods.map((name, i) => ({ name, ip: ips[i] })) });
    await client.resource('rbac.authorization.k8s.io/v1', 'Role').create({
      metadata: { name: 'instance', namespace },
      rules: buildInstanceRoleRules(cluster, []),
    });
    await client.resource('rbac.authorization.k8s.io/v1', 'RoleBinding').create({
      metadata: { name: 'instance', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'instance' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'instance-agent' }],
    });
    const start = (i, bootstrap) =>
      startAgent({
        root,
        name: pods[i],
        ip: ips[i],
        namespace,
        cluster,
        bootstrap,
        kubeconfigPath: kubeconfig,
        superuserPassword: superuser.password,
        replicationPassword: replication.password,
        // The fixture passes the agents a clean environment; V8 flags under trial go through.
        ...(process.env.NODE_OPTIONS ? { env: { NODE_OPTIONS: process.env.NODE_OPTIONS } } : {}),
      });
    const ready = (i, role) =>
      waitFor(
        `${pods[i]} ready as ${role}`,
        async () => {
          const raw = (await client.resource('v1', 'Pod').get(pods[i], { namespace })).metadata?.annotations?.[
            'postgres.kanri.dev/status'
          ];
          const report = raw ? JSON.parse(raw) : undefined;
          return report?.ready && report.role === role;
        },
        180_000,
        500,
      );
    agents.push(start(0, 'initdb'));
    await ready(0, 'primary');
    agents.push(start(1, 'basebackup'), start(2, 'basebackup'));
    await ready(1, 'replica');
    await ready(2, 'replica');
    log('three agents ready; sampling');
    const members = await sample(agents.map((a) => a.child.pid));
    log(`agents: ${JSON.stringify(members)}`);
    return members;
  } catch (error) {
    for (const a of agents) console.error(`--- ${a.name}\n${a.log().split('\n').slice(-15).join('\n')}`);
    throw error;
  } finally {
    for (const a of agents) await stopAgent(a, 'SIGTERM', 20_000);
    await client.close();
    await cp.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

export async function measurePatroni() {
  const system = await startPatroniSystem({ log });
  try {
    log('three Patroni members healthy; sampling');
    const pids = system.members.map((m) => m.proc.pid);
    const members = await sample(pids);
    // Patroni's own children (if any) besides postgres, which runs in its own session.
    const children = pids.map((pid) => descendants(pid).length);
    log(`patroni: ${JSON.stringify(members)} children ${JSON.stringify(children)}`);
    return members;
  } finally {
    await system.stop();
    killAllGroups();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const which = process.argv[2] ?? 'both';
  const agents = which === 'patroni' ? null : await measureAgents();
  const patroni = which === 'agent' ? null : await measurePatroni();
  const per = (members, key = 'rssMiB') => (members ? median(members.map((m) => m[key])) : null);
  console.log(
    JSON.stringify({
      ...runMetadata(),
      agent: { members: agents, medianRssMiB: per(agents), medianPrivateMiB: per(agents, 'privateMiB') },
      patroni: { members: patroni, medianRssMiB: per(patroni), medianPrivateMiB: per(patroni, 'privateMiB') },
    }),
  );
}
