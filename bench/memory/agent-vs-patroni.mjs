#!/usr/bin/env node
// Each member of a three-member PostgreSQL 15 cluster (a primary streaming to two replicas), Kanri
// against Patroni (4.1.x from PyPI since 2026-12-06, before Debian's 3.0.2; started by
// bench/failover/patroni.mjs, its version in the JSON): every process of the
// member is sampled every second for BENCH_HA_SECONDS (default 30), each one and their sum (the
// Pod). Kanri's member is the keeper (the container's first process), the instance agent it runs
// and the postgres it runs for the agent, all under the keeper; Patroni's is Patroni and the
// postgres it starts in a session of its own. Per process: RSS, PSS and private memory
// (pod-memory.mjs says which sum means what). The agents are started as
// packages/postgres/test/agent.test.ts starts them (the fixture in dist). Last stdout line: one
// JSON object.
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
import { processTree } from '../../packages/postgres/dist/test/support/process-tree.js';
import { startControlPlane, waitFor } from '../../packages/testenv/dist/src/index.js';
import { startPatroniSystem } from '../failover/patroni.mjs';
import { postmasterPid } from '../failover/postmaster.mjs';
import { killAllGroups } from '../failover/processes.mjs';
import { KANRI_WAL_SEGMENT_MIB } from '../failover/wal-segments.mjs';
import { queryOnce } from '../failover/writer.mjs';
import { memoryOf, runMetadata } from './lib.mjs';
import { classifyProcesses, formatComparison, sampleTotals, summarizeMember, summarizeSystem } from './pod-memory.mjs';

const log = (message) => console.error(`[agent-vs-patroni] ${message}`);
const SECONDS = Number(process.env.BENCH_HA_SECONDS ?? 30);

/**
 * One sample of one member: its processes now (`member()` gives `{ root, postmaster, rootRole,
 * childRole }`), each with its role and memory. A process that exits between the listing and the
 * reading is left out. The member's first process must be there; its postmaster may be between a
 * stop and a start (an HA process restarts postgres now and then): the sample waits up to 5 s for
 * it and says so, and fails only if there is still none.
 */
async function sampleMember(member) {
  for (let waited = 0; ; waited += 250) {
    const { root, postmaster, ...roles } = member();
    const table = [...processTree(root), ...(postmaster ? processTree(postmaster) : [])];
    if (!table.some((p) => p.pid === root)) throw new Error(`process ${root} is gone`);
    if (postmaster && table.some((p) => p.pid === postmaster)) {
      if (waited) log(`${root}: no postmaster for ${waited} ms (restarted), then ${postmaster}`);
      return classifyProcesses(table, { root, postmaster, ...roles }).flatMap(({ pid, role }) => {
        const m = memoryOf(pid);
        return m ? [{ pid, role, rss: m.rss, pss: m.pss, private: m.private }] : [];
      });
    }
    if (waited >= 5_000) throw new Error(`${root} runs no postmaster (postmaster.pid: ${postmaster ?? 'none'})`);
    await sleep(250);
  }
}

/** Samples every member every second for `seconds`; per member its summary (pod-memory.mjs). */
async function sample(members, seconds = SECONDS) {
  const samples = members.map(() => []);
  for (let s = 0; s < seconds; s++) {
    await sleep(1_000);
    for (const [i, member] of members.entries()) samples[i].push(sampleTotals(await sampleMember(member)));
  }
  return samples.map((memberSamples) => summarizeMember(memberSamples));
}

/** What both sides' postgres run with, from the primary: the settings that decide its memory and WAL. */
async function postgresSettings(address, credentials) {
  const rows = await queryOnce(
    address,
    credentials,
    "SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers','max_connections','wal_segment_size','server_version','work_mem','wal_buffers')",
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.unit ? `${r.setting} ${r.unit}` : r.setting]));
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
    const settings = await postgresSettings(`${ips[0]}:5432`, {
      user: 'postgres',
      password: superuser.password,
      database: 'postgres',
    });
    log(`three agents ready; sampling every process of each member (postgres: ${JSON.stringify(settings)})`);
    // setpriv execs node: the child's PID is the keeper's, the member's first process.
    const members = await sample(
      agents.map((a) => () => ({
        root: a.child.pid,
        postmaster: a.postmasterPid(),
        rootRole: 'keeper',
        childRole: 'agent',
      })),
    );
    return { ...summarizeSystem(members), postgres: settings };
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
  // Kanri's WAL segment size on both sides, as bench:failover runs them by default.
  const system = await startPatroniSystem({ log, walSegmentMiB: KANRI_WAL_SEGMENT_MIB });
  try {
    const primary = await system.primary();
    const settings = await postgresSettings(primary.address, system.credentials);
    log(`three Patroni members healthy; sampling every process of each member (postgres: ${JSON.stringify(settings)})`);
    // postgres runs in a session of its own, outside Patroni's tree: found by its postmaster.pid.
    const members = await sample(
      system.members.map((m) => () => ({
        root: m.proc.pid,
        postmaster: postmasterPid(m.dataDir),
        rootRole: 'patroni',
        childRole: 'helper',
      })),
    );
    return { ...summarizeSystem(members), postgres: settings, patroniVersion: system.settings.patroniVersion };
  } finally {
    await system.stop();
    killAllGroups();
  }
}

/** The JSON both entry points print: each system's figures, and the comparison as lines. */
export function haResult(agents, patroni) {
  const table = formatComparison({ kanri: agents, patroni });
  log(`\n${table}`);
  return {
    method:
      'every process of each member sampled every second (/proc/<pid>/status and smaps_rollup); per sample the sums per role and for the member; medians over the samples, then across the 3 members. The Pod: summed PSS (RSS counts shared pages once per process)',
    kanri: agents,
    patroni,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const which = process.argv[2] ?? 'both';
  const agents = which === 'patroni' ? null : await measureAgents();
  const patroni = which === 'agent' ? null : await measurePatroni();
  console.log(
    JSON.stringify({ ...runMetadata(), ...haResult(agents, patroni), loadAverageAfter: runMetadata().loadAverage }),
  );
}
