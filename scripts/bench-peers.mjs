#!/usr/bin/env node
// Kanri side by side with the systems users pick instead (issue 39): CloudNativePG 1.30 and
// Patroni 4 on Kubernetes, each with a 3-instance PostgreSQL 16 cluster on the same four real
// nodes (kubelet, containerd, kube-proxy; real-node-0 is the host's gateway to Service IPs and
// runs no instance), under the same faults, in one run, trials alternating between systems. The
// client writes through each system's read-write Service as an application does. Rows: see
// bench/peers/rows.mjs and bench/README.md. The last line of stdout is one JSON object.
// Run as root with `npm run bench:peers [-- --quick] [--rows 1,2,4] [--trials 3] [--systems kanri,cloudnative-pg,patroni]`.
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import { createBrainTable, SplitBrainWatcher } from '../bench/failover/split-brain.mjs';
import { createProbeTable } from '../bench/failover/writable-probe.mjs';
import { createTable, Writer } from '../bench/failover/writer.mjs';
import { loadBulk, runBackupTrial } from '../bench/peers/backup-trial.mjs';
import { runFaultTrial } from '../bench/peers/fault-trial.mjs';
import { PEER_HA } from '../bench/peers/ha-timings.mjs';
import { instanceOverheads, operatorMemory, timeManyClusters, timeOneCluster } from '../bench/peers/ready-memory.mjs';
import { runRolloutTrial } from '../bench/peers/rollout-trial.mjs';
import { PEER_ROWS, parseRows, QUICK_ROWS } from '../bench/peers/rows.mjs';
import { formatTable, pairAgainstKanri, runStatus, summarizeTrials } from '../bench/peers/summary.mjs';
import { KubeClient } from '../packages/client/dist/src/index.js';
import { realNodesUnsupportedReason, startControlPlane } from '../packages/testenv/dist/src/index.js';
import { benchEnvironment, exitOnSignals, median } from './bench-lib.mjs';

const run = promisify(execFile);
/** Where each system's adapter lives (bench/peers/system.mjs is the contract). */
const SYSTEM_MODULES = {
  kanri: ['../bench/peers/kanri/system.mjs', 'kanriSystem'],
  'cloudnative-pg': ['../bench/peers/cloudnative-pg/system.mjs', 'default'],
  patroni: ['../bench/peers/patroni/system.mjs', 'default'],
};
/** Rows not measured yet, and why. */
const NOT_MEASURED = {};
/** The bucket every system's backups go to (row 6), each under its own prefix. */
const BUCKET = 'peers';

const { values } = parseArgs({
  options: {
    systems: { type: 'string', default: 'kanri,cloudnative-pg,patroni' },
    rows: { type: 'string' },
    trials: { type: 'string' },
    quick: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
const usage =
  'usage: node scripts/bench-peers.mjs [--quick] [--rows 1,2,3,4,5,6,7,8] [--trials 3] [--systems kanri,cloudnative-pg,patroni]';
let rows;
try {
  rows = parseRows(values.rows ?? (values.quick ? QUICK_ROWS : PEER_ROWS.map((r) => r.row)).join(','));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
const trials = Number(values.trials ?? (values.quick ? 1 : 3));
const systemNames = values.systems.split(',').map((s) => s.trim());
if (
  values.help ||
  !Number.isInteger(trials) ||
  trials < 1 ||
  !systemNames.every((s) => s in SYSTEM_MODULES) ||
  new Set(systemNames).size !== systemNames.length
) {
  console.error(usage);
  process.exit(values.help ? 0 : 2);
}
const log = (line) => console.error(`[bench:peers] ${line}`);
const unsupported = await realNodesUnsupportedReason();
if (unsupported) {
  console.error(`bench:peers runs every system on real nodes, but ${unsupported}`);
  process.exit(2);
}
const environment = benchEnvironment();
const systems = [];
for (const name of systemNames) {
  const [path, exported] = SYSTEM_MODULES[name];
  systems.push((await import(path))[exported]);
}

let cp;
let client;
/** system name → { system, cluster, spec, target, writer, watcher } for each mode's cluster. */
const running = { async: new Map(), sync: new Map() };
let stopping = false;

/**
 * Creates a cluster through `create`, again while the API server refuses it with a server error:
 * a peer's admission webhook may not answer for a while after a node came back (its operator
 * restarting on it), which says nothing about the next row. Other errors, or 3 minutes of these,
 * are thrown.
 */
async function createWithRetry(what, create) {
  const deadline = performance.now() + 180_000;
  for (;;) {
    try {
      return await create();
    } catch (error) {
      const transient = (error.statusCode ?? 0) >= 500 || /failed calling webhook/.test(error.message);
      if (!transient || performance.now() > deadline || stopping) throw error;
      log(`${what}: ${error.message.split('\n')[0].slice(0, 200)}; trying again in 5 s`);
      await sleep(5_000);
    }
  }
}

async function ensureNamespace(env, name) {
  await env.client
    .resource('v1', 'Namespace')
    .create({ metadata: { name } })
    .catch((error) => {
      if (!/AlreadyExists|already exists/.test(error.message)) throw error;
    });
}

async function startCluster(env, system, mode) {
  const spec = {
    name: 'peers',
    namespace: `peers-${system.name}${mode === 'sync' ? '-sync' : ''}`,
    instances: 3,
    synchronous: mode === 'sync',
    storage: '1Gi',
  };
  await ensureNamespace(env, spec.namespace);
  log(`${system.name}: creating a 3-instance ${mode} cluster in ${spec.namespace}`);
  const started = performance.now();
  const cluster = await createWithRetry(`${system.name}: creating ${spec.namespace}/${spec.name}`, () =>
    system.createCluster(env, spec),
  );
  await cluster.waitReady(15 * 60_000);
  log(`${system.name}: ${mode} cluster Ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const target = await cluster.writeTarget();
  await createTable(target.address, target);
  await createProbeTable(target.address, target);
  await createBrainTable(target.address, target);
  const writer = new Writer(async () => [target.address], target);
  const watcher = new SplitBrainWatcher(async () => {
    const pods = env.client.resource('v1', 'Pod');
    const out = [];
    for (const name of await cluster.instancePods()) {
      const ip = (await pods.get(name, { namespace: spec.namespace })).status?.podIP;
      if (ip) out.push({ name, address: `${ip}:5432` });
    }
    return out;
  }, target);
  watcher.start();
  const entry = { system, cluster, spec, target, writer, watcher };
  running[mode].set(system.name, entry);
  return entry;
}

async function stopCluster(mode, name, { remove = true } = {}) {
  const entry = running[mode].get(name);
  if (!entry) return;
  running[mode].delete(name);
  await entry.watcher.stop().catch(() => {});
  await entry.writer.stop().catch(() => {});
  if (remove) await entry.cluster.delete().catch((error) => log(`${name}: deleting its cluster: ${error.message}`));
}

const cleanUp = async () => {
  for (const mode of ['async', 'sync'])
    for (const name of [...running[mode].keys()]) await stopCluster(mode, name, { remove: false });
  await client?.close().catch(() => {});
  await cp?.stop().catch((error) => log(`stopping the control plane: ${error.message}`));
};
let cleaning;
const cleanUpOnce = () => {
  cleaning ??= cleanUp();
  return cleaning;
};
exitOnSignals(log, cleanUpOnce, () => {
  stopping = true;
});

/**
 * Row 6's source cluster of each system that has backups: one instance archiving to the S3
 * server, filled with 1 GB. A system that cannot get there has the failure as its only trial.
 */
async function startBackupSources(env) {
  const sources = new Map();
  const failures = {};
  for (const system of systems) {
    if (system.backupsUnsupported || stopping) continue;
    const spec = {
      name: 'source',
      namespace: `peers-${system.name}-backup`,
      instances: 1,
      synchronous: false,
      storage: '4Gi',
      backups: true,
    };
    try {
      await ensureNamespace(env, spec.namespace);
      log(`${system.name}: creating a 1-instance cluster archiving to s3://${BUCKET} in ${spec.namespace}`);
      const cluster = await createWithRetry(`${system.name}: creating ${spec.namespace}/${spec.name}`, () =>
        system.createCluster(env, spec),
      );
      await cluster.waitReady(15 * 60_000);
      const loaded = await loadBulk(await cluster.writeTarget(), { log, name: system.name });
      sources.set(system.name, { system, cluster, spec, loaded });
    } catch (error) {
      log(`${system.name}: its backup row's source cluster failed: ${error.message}`);
      failures[system.name] = error.message;
    }
  }
  return { sources, failures };
}

/** Trial order: alternating, each system first in turn, so no system always meets a machine the others just loaded. */
const orderFor = (trial) => systems.map((_, i) => systems[(i + trial - 1) % systems.length]);

try {
  const imageArchives = [];
  for (const system of systems) {
    log(`${system.name}: building what it runs (cached after the first run)`);
    imageArchives.push(...(await system.prepare({ log })).imageArchives);
  }
  log('starting a control plane with 4 real nodes');
  // The node-lifecycle controller marks a silent node NotReady (after Kubernetes' default 50 s)
  // and its Pods not Ready, as every real cluster does: CloudNativePG fails over only then.
  cp = await startControlPlane({ realNodes: { count: 4, imageArchives }, nodeLifecycle: true, s3: rows.includes(6) });
  client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  // The host reaches Service IPs through real-node-0's kube-proxy: no instance may run there.
  await client.resource('v1', 'Node').patch('real-node-0', { spec: { unschedulable: true } }, { type: 'merge' });
  const env = {
    cp,
    client,
    kubectl: async (...args) =>
      (await run(cp.binaries.kubectl, args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } })).stdout,
    instanceNodes: ['real-node-1', 'real-node-2', 'real-node-3'],
    s3: cp.s3
      ? {
          endpoint: cp.s3.endpoint,
          host: cp.s3.host,
          port: cp.s3.port,
          region: cp.s3.region,
          accessKeyId: cp.s3.accessKeyId,
          secretAccessKey: cp.s3.secretAccessKey,
          caPem: cp.s3.caPem,
          bucket: BUCKET,
        }
      : undefined,
    log,
  };
  await cp.s3?.createBucket(BUCKET);
  for (const system of systems) await system.install(env);
  const memory = {};
  if (rows.includes(8)) {
    // Idle: installed, no cluster yet, after its start-up work settled.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    for (const system of systems) memory[system.name] = { operatorIdleBytes: await operatorMemory(env, system) };
  }
  const needsAsync = rows.some((r) => r !== 6 && r !== 7);
  if (needsAsync) for (const system of systems) await startCluster(env, system, 'async');

  const report = [];
  for (const rowNumber of rows) {
    if (stopping) break;
    const row = PEER_ROWS.find((r) => r.row === rowNumber);
    if (NOT_MEASURED[rowNumber]) {
      report.push({
        row: row.row,
        key: row.key,
        title: row.title,
        kind: row.kind,
        notMeasured: NOT_MEASURED[rowNumber],
      });
      continue;
    }
    log(`row ${row.row}: ${row.title}`);
    if (row.kind === 'fault' || row.kind === 'rollout') {
      for (const mode of row.bothModes ? ['async', 'sync'] : ['async']) {
        if (mode === 'sync') for (const system of systems) await startCluster(env, system, 'sync');
        const results = Object.fromEntries(systems.map((s) => [s.name, []]));
        for (let trial = 1; trial <= trials && !stopping; trial++) {
          for (const system of orderFor(trial)) {
            const tag = row.row * 100 + (mode === 'sync' ? 50 : 0) + trial;
            const entry = running[mode].get(system.name);
            const result =
              row.kind === 'fault'
                ? await runFaultTrial(env, entry, row, tag, { log })
                : await runRolloutTrial(entry, row, tag, { log });
            results[system.name].push(result);
            if (result.healError || result.startError) {
              log(
                `  ${system.name}: did not heal (${result.healError ?? result.startError}); creating its cluster anew`,
              );
              await stopCluster(mode, system.name);
              await startCluster(env, system, mode);
            }
          }
        }
        const entry = { row: row.row, key: row.key, title: row.title, kind: row.kind, mode };
        for (const system of systems) entry[system.name] = summarizeTrials(results[system.name], row.kind);
        entry.paired = pairAgainstKanri(results, row.kind);
        entry.trialResults = results;
        report.push(entry);
        if (mode === 'sync') for (const system of systems) await stopCluster('sync', system.name);
      }
    } else if (row.kind === 'backup') {
      const { sources, failures } = await startBackupSources(env);
      const taking = systems.filter((s) => !s.backupsUnsupported);
      const results = Object.fromEntries(
        taking.map((s) => [s.name, failures[s.name] ? [{ ok: false, error: failures[s.name] }] : []]),
      );
      for (let trial = 1; trial <= trials && !stopping; trial++)
        for (const system of orderFor(trial)) {
          const source = sources.get(system.name);
          if (source) results[system.name].push(await runBackupTrial(env, source, trial, { log, s3Server: cp.s3 }));
        }
      const entry = { row: row.row, key: row.key, title: row.title, kind: row.kind };
      for (const system of systems)
        entry[system.name] = system.backupsUnsupported
          ? { notApplicable: system.backupsUnsupported }
          : summarizeTrials(results[system.name], 'backup');
      entry.paired = pairAgainstKanri(results, 'backup');
      entry.pairedRestore = pairAgainstKanri(results, 'backup', 'restoreMs');
      entry.trialResults = results;
      report.push(entry);
      for (const { system, cluster } of sources.values())
        await cluster.delete().catch((error) => log(`${system.name}: deleting its backup source: ${error.message}`));
    } else if (row.kind === 'ready') {
      const results = Object.fromEntries(systems.map((s) => [s.name, []]));
      for (let trial = 1; trial <= trials && !stopping; trial++)
        for (const system of orderFor(trial)) {
          try {
            const { readyMs, pods } = await timeOneCluster(env, system, trial, 3);
            const stages = pods.map((p) => `${p.pod} ${p.created}→${p.PodScheduled}→${p.ContainersReady}`).join(', ');
            log(
              `  ${system.name} row 7 trial ${trial}: Ready in ${(readyMs / 1000).toFixed(1)} s (Pods created→scheduled→ready, s: ${stages})`,
            );
            results[system.name].push({ ok: true, readyMs, pods });
          } catch (error) {
            log(`  ${system.name} row 7 trial ${trial}: FAILED: ${error.message}`);
            results[system.name].push({ ok: false, error: error.message });
          }
        }
      const entry = { row: row.row, key: row.key, title: row.title, kind: row.kind };
      for (const system of systems) {
        entry[system.name] = summarizeTrials(results[system.name], 'ready');
        if (values.quick) continue;
        try {
          const many = await timeManyClusters(env, system);
          entry[system.name].many = many;
          memory[system.name] = {
            ...memory[system.name],
            operatorWithClustersBytes: many.operatorBytes,
            withClusters: many.clusters,
          };
          log(
            `  ${system.name}: ${many.clusters} clusters Ready, the last after ${(many.allReadyMs / 1000).toFixed(1)} s`,
          );
        } catch (error) {
          entry[system.name].errors.push(`${error.message} (20 clusters at once)`);
        }
      }
      entry.paired = pairAgainstKanri(results, 'ready');
      entry.trialResults = results;
      report.push(entry);
    } else if (row.kind === 'memory') {
      const entry = { row: row.row, key: row.key, title: row.title, kind: row.kind };
      for (const system of systems) {
        const main = running.async.get(system.name);
        const overheads = main ? await instanceOverheads(env, main.cluster, main.spec.namespace) : [];
        entry[system.name] = {
          trials: 1,
          okTrials: 1,
          ...memory[system.name],
          instanceOverheadBytes: { median: median(overheads), max: overheads.length ? Math.max(...overheads) : null },
        };
      }
      report.push(entry);
    }
  }
  if (stopping) process.exit(130);
  const names = systems.map((s) => s.name);
  const { status, reasons } = runStatus(report, names);
  console.log('');
  console.log(
    `bench:peers: ${trials} trial(s) per row and system, alternating; 3 instances each on real nodes; ` +
      `HA timings lease/ttl ${PEER_HA.leaseSeconds} s, renew deadline/retry_timeout ${PEER_HA.renewDeadlineSeconds} s, ` +
      `period/loop_wait ${PEER_HA.retryPeriodSeconds} s where a system has the setting. Seconds from the fault, median (max).`,
  );
  console.log(formatTable(report, names));
  console.log(`status: ${status}${reasons.length ? ` (${reasons.join('; ')})` : ''}`);
  console.log(
    JSON.stringify({
      benchmark: 'peers',
      status,
      statusReasons: reasons,
      quick: values.quick,
      trials,
      systems: names,
      ha: PEER_HA,
      rows: report,
      environment: environment.finish(),
    }),
  );
  if (status !== 'ok') process.exitCode = 1;
} finally {
  if (!stopping) await cleanUpOnce();
}
