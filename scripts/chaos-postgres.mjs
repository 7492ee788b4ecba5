#!/usr/bin/env node
// Chaos for the PostgreSQL operator: a 3-instance cluster on process nodes (optionally
// synchronous), a writer committing one row per transaction through `<name>-primary` and
// recording every acknowledged commit, and a split-brain watcher probing every instance directly
// every ~50 ms. For `--duration` seconds it injects faults drawn from a seeded RNG, one at a time,
// waiting for the cluster to heal after each:
//   kill-primary  the primary's node loses power (crash), is powered on again later (recover)
//   kill-replica  a replica's node loses power, then comes back
//   kill-operator SIGKILL the operator, start it again
//   stall-api     stall the API server's connections (and refuse new ones) for the operator, the
//                 primary's node's Pods or every node's Pods, through fault proxies
// It reports faults by kind, failovers observed (Lease holder changes), the RTO of each primary
// kill, acknowledged commits lost (must be 0 with --sync) and split-brain moments (must be 0).
// The last line of stdout is one JSON object. Run with
// `npm run chaos:postgres -- --duration 300 [--seed N] [--sync]`; see bench/README.md.
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startKanriSystem } from '../bench/failover/kanri.mjs';
import { killAllGroups } from '../bench/failover/processes.mjs';
import { describeBlindSpans } from '../bench/failover/split-brain-check.mjs';
import { startWorkload } from '../bench/failover/workload.mjs';
import { queryOnce, TABLE } from '../bench/failover/writer.mjs';
import { names } from '../packages/postgres/dist/src/index.js';
import { exitOnSignals, median, rng } from './bench-lib.mjs';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '300' },
    seed: { type: 'string' },
    sync: { type: 'boolean', default: false },
    faults: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
const durationMs = Number(values.duration) * 1000;
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
if (values.help || !(durationMs > 0) || !Number.isInteger(seed)) {
  console.error('usage: node scripts/chaos-postgres.mjs [--duration 300] [--seed N] [--sync] [--faults kind,…]');
  process.exit(values.help ? 0 : 2);
}

const t0 = performance.now();
const stamp = () => `${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s`;
const log = (line) => console.error(`[chaos:postgres ${stamp()}] ${line}`);
const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));
const round1 = (x) => (x == null ? null : Math.round(x * 10) / 10);

const random = rng(seed);
const between = (lo, hi) => lo + random() * (hi - lo);
const pick = (weighted) => {
  let r = random() * weighted.reduce((s, [, w]) => s + w, 0);
  for (const [value, w] of weighted) {
    r -= w;
    if (r < 0) return value;
  }
  return weighted.at(-1)[0];
};

const ALL_FAULTS = [
  ['kill-primary', 35],
  ['kill-replica', 25],
  ['kill-operator', 20],
  ['stall-api', 20],
];
const only = values.faults?.split(',').map((f) => f.trim());
const FAULTS = only ? ALL_FAULTS.filter(([kind]) => only.includes(kind)) : ALL_FAULTS;
if (!FAULTS.length || (only && only.length !== FAULTS.length)) {
  console.error(`--faults: a comma-separated subset of ${ALL_FAULTS.map(([k]) => k).join(', ')}`);
  process.exit(2);
}

let system;
let writer;
let watcher;
let stopping = false;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    await writer?.stop().catch(() => {});
    await watcher?.stop().catch(() => {});
    await system?.stop().catch((error) => log(`cleanup: ${error.message}`));
    killAllGroups();
  })();
  return cleaning;
};
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

/** Follows the leader Lease: every change of holder is a failover (or a fenced primary's return). */
function followLease(client, cluster) {
  const changes = [];
  let holder;
  let stopped = false;
  const leases = client.resource('coordination.k8s.io/v1', 'Lease');
  const loop = (async () => {
    while (!stopped) {
      try {
        const h = (await leases.get(names.leaderLease(cluster), { namespace: 'default' })).spec?.holderIdentity || '';
        if (holder !== undefined && h && h !== holder)
          changes.push({ atMs: round1(performance.now() - t0), from: holder, to: h });
        if (h) holder = h;
      } catch {
        // The admin client goes straight to the API server; a failed read is retried.
      }
      await sleep(250);
    }
  })();
  return {
    changes,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** The longest stretch without an acknowledged commit between `from` and `to`. */
function longestGap(acks, from, to) {
  let last = from;
  let gap = 0;
  for (const a of acks) {
    if (a.at < from) continue;
    if (a.at > to) break;
    gap = Math.max(gap, a.at - last);
    last = a.at;
  }
  return Math.max(gap, to - last);
}

async function main() {
  const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
  log(`seed ${seed}, ${values.duration} s of faults, ${values.sync ? 'synchronous' : 'asynchronous'} replication`);
  system = await startKanriSystem({ sync: values.sync, log, name: 'chaos', apiProxy: true, operatorProxy: true });
  const { env, cp, credentials } = system;
  const primary = await system.primary();
  ({ writer, watcher } = await startWorkload(system, primary.address, 0));
  const lease = followLease(system.client, system.clusterName);
  await sleep(2_000);

  const faults = [];
  let checkedUpTo = 0;
  const lost = [];
  /** Acknowledged commits from `checkedUpTo` on that the primary lacks. */
  const checkLost = async () => {
    const acks = writer.acks.filter((a) => a.seq > checkedUpTo);
    if (!acks.length) return [];
    const hi = acks.at(-1).seq;
    const { address } = await system.primary();
    const rows = await queryOnce(address, credentials, `select seq from ${TABLE} where seq > $1 and seq <= $2`, [
      checkedUpTo,
      hi,
    ]);
    const present = new Set(rows.map((r) => Number(r.seq)));
    const missing = acks.filter((a) => !present.has(a.seq)).map((a) => a.seq);
    checkedUpTo = hi;
    lost.push(...missing);
    return missing;
  };

  const injectStart = performance.now();
  let stuck;
  for (let n = 1; !stopping && performance.now() - injectStart < durationMs; n++) {
    const kind = pick(FAULTS);
    const fault = { n, kind, atMs: round1(performance.now() - t0) };
    faults.push(fault);
    writer.trial = n;
    const before = await system.primary();
    fault.primaryBefore = before.name;
    const startedAt = performance.now();
    try {
      if (kind === 'kill-primary') {
        await system.kill(before.name);
        fault.target = before.name;
        const deadline = performance.now() + 120_000;
        let ack = writer.firstAckAfter(startedAt, before.address);
        while (!ack && performance.now() < deadline) {
          await sleep(10);
          ack = writer.firstAckAfter(startedAt, before.address);
        }
        fault.rtoMs = ack ? round1(ack.at - startedAt) : null;
        fault.newPrimary = ack?.address ?? null;
        await sleep(between(0, 10_000));
        await system.restore(before.name);
      } else if (kind === 'kill-replica') {
        const replicas = (await system.instances()).filter((i) => i.name !== before.name);
        const target = replicas[Math.floor(random() * replicas.length)];
        fault.target = target.name;
        await system.kill(target.name);
        await sleep(between(5_000, 20_000));
        await system.restore(target.name);
      } else if (kind === 'kill-operator') {
        fault.target = `operator pid ${env.operatorPid}`;
        await env.stopOperator('SIGKILL');
        await sleep(between(2_000, 10_000));
        env.startOperator();
      } else {
        const scope = pick([
          ['operator', 1],
          ['primary-node', 1],
          ['all-nodes', 1],
        ]);
        const proxies =
          scope === 'operator'
            ? [env.operatorProxy]
            : scope === 'all-nodes'
              ? cp.processNodes.map((node) => node.apiProxy)
              : [await system.nodeOfPod(before.name).then((node) => node.apiProxy)];
        fault.target = scope;
        fault.stallMs = Math.round(between(3_000, 20_000));
        for (const proxy of proxies) {
          proxy.refuseNew(true);
          proxy.stallOpenConnections();
        }
        await sleep(fault.stallMs);
        for (const proxy of proxies) {
          proxy.refuseNew(false);
          proxy.dropAll();
        }
      }
      const recoverFrom = performance.now();
      await system.waitHealthy(240_000);
      fault.recoveredMs = round1(performance.now() - recoverFrom);
      fault.totalMs = round1(performance.now() - startedAt);
      fault.longestWriteGapMs = round1(longestGap(writer.acks, startedAt, performance.now()));
      fault.primaryAfter = (await system.primary()).name;
      fault.lost = (await checkLost()).length;
      log(
        `fault ${n}: ${kind} ${fault.target}` +
          (fault.stallMs ? ` for ${secs(fault.stallMs)} s` : '') +
          (kind === 'kill-primary' ? `, RTO ${secs(fault.rtoMs)} s → ${fault.newPrimary}` : '') +
          `; longest write gap ${secs(fault.longestWriteGapMs)} s; healthy again after ${secs(fault.totalMs)} s; ` +
          `primary ${fault.primaryAfter}; ${fault.lost} acknowledged commits lost`,
      );
    } catch (error) {
      fault.error = error.message;
      stuck = `fault ${n} (${kind}): ${error.message}`;
      log(`fault ${n}: ${kind}: the cluster did not heal: ${error.message}`);
      break;
    }
    await sleep(between(2_000, 8_000));
  }

  // Every acknowledged commit must be on the last primary.
  await writer.pause();
  if (!stuck) await checkLost().catch((error) => log(`final check: ${error.message}`));
  await writer.stop();
  await watcher.stop();
  await lease.stop();
  const violations = watcher.violations();
  // Where the watcher probed a member not at all for over 10 s, it saw nothing: no count there.
  const blind = watcher.blindSpans(0);

  const byKind = Object.fromEntries(FAULTS.map(([k]) => [k, faults.filter((f) => f.kind === k).length]));
  const rtos = faults.filter((f) => f.kind === 'kill-primary' && f.rtoMs != null).map((f) => f.rtoMs);
  const report = {
    benchmark: 'chaos-postgres',
    seed,
    mode: values.sync ? 'sync' : 'async',
    durationS: Number(values.duration),
    faultsInjected: faults.length,
    faultsByKind: byKind,
    failoversObserved: lease.changes.length,
    leaseChanges: lease.changes,
    rtoMs: rtos,
    rtoMsMedian: rtos.length ? round1(median(rtos)) : null,
    rtoMsMin: rtos.length ? Math.min(...rtos) : null,
    rtoMsMax: rtos.length ? Math.max(...rtos) : null,
    primaryKillsWithoutFailover: faults.filter((f) => f.kind === 'kill-primary' && f.rtoMs == null).length,
    commitsAcked: writer.acks.length,
    commitsLost: lost.length,
    lostSeqs: lost.slice(0, 50),
    splitBrainMoments: blind.length ? null : violations.length,
    splitBrain: violations.slice(0, 20),
    watcherBlindSpans: blind,
    watcherProbes: watcher.probes,
    watcherAcceptedWrites: watcher.accepted.length,
    stuck: stuck ?? null,
    faults,
    node: process.version,
    cpus: cpus().length,
    loadAtStart,
    loadAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
  };

  console.log('');
  console.log(`Chaos: seed ${seed}, ${values.duration} s, ${report.mode} replication`);
  console.log(
    `faults injected      ${faults.length} (${Object.entries(byKind)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
  );
  console.log(`failovers observed   ${report.failoversObserved} (Lease holder changes)`);
  console.log(
    `RTO per primary kill ${rtos.length ? `median ${secs(report.rtoMsMedian)} s, min ${secs(report.rtoMsMin)} s, max ${secs(report.rtoMsMax)} s (n = ${rtos.length})` : '-'}`,
  );
  console.log(`commits              ${report.commitsAcked} acknowledged, ${report.commitsLost} lost`);
  console.log(
    `split-brain moments  ${report.splitBrainMoments ?? `${violations.length} seen, no verdict: the watcher was blind (${describeBlindSpans(blind).join('; ')})`} (${watcher.probes} probes, ${watcher.accepted.length} writes accepted)`,
  );
  if (stuck) console.log(`STUCK                ${stuck}`);
  console.log(JSON.stringify(report));
  if (
    stuck ||
    violations.length ||
    blind.length ||
    (values.sync && lost.length) ||
    report.primaryKillsWithoutFailover
  ) {
    process.exitCode = 1;
  }
}

try {
  await main();
} catch (error) {
  if (!stopping) {
    log(error.stack ?? error.message);
    process.exitCode = 1;
  }
} finally {
  if (!stopping) await cleanUp();
}
