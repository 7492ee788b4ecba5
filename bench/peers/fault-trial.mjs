// One trial of a fault row (1–4), the same for every system: the client commits one row per
// transaction through the system's read-write Service (as an application does, with no list of
// members to search), a probe tries a write straight at every other member, the split-brain
// watcher looks at every member, and the fault falls on the primary the system names.
// Figures, from the injection (performance.now()):
// - clientGapMs: the longest time the client had no acknowledged write (the row's figure);
// - clientMs: when the client's writes resumed after that gap;
// - writableMs: the first write another member acknowledged to the probe (null: none did);
// - endpointMs: when the read-write Service's EndpointSlices first listed another ready address;
// - lost: acknowledged commits of the trial that the primary at the end lacks, counted by the
//   member that acknowledged them (lostBy), with the member that answered the check (checkedOn)
//   and what each standby had replayed when the fault came (standbysAtFault);
// - primaryChanged, splitBrain (moments two members took writes), blindSpans.
import { setTimeout as sleep } from 'node:timers/promises';
import { isProcessAlive } from '../../packages/testenv/dist/src/index.js';
import { round1 } from '../../scripts/bench-stats.mjs';
import { WritableProbe } from '../failover/writable-probe.mjs';
import { checkCommits, queryOnce } from '../failover/writer.mjs';
import { longestGap } from '../failures/gaps.mjs';
import { serviceAt, watchEndpoints } from './endpoint-watch.mjs';
import { killPostmaster, podProcesses } from './pod-processes.mjs';

async function until(condition, timeoutMs) {
  const start = performance.now();
  while (!(await condition())) {
    if (performance.now() - start > timeoutMs) return false;
    await sleep(20);
  }
  return true;
}

/**
 * `checkCommits` through the read-write Service, tried for up to 30 s: the Service may be between
 * primaries for a moment even after writes resumed (a former primary's Pod coming back). A check
 * answered by a standby is tried again: its lag is no loss.
 */
export async function lostCommitsSoon(writer, trial, target) {
  for (let attempt = 0; ; attempt++) {
    try {
      const check = await checkCommits(writer, trial, target.address, target);
      if (check.inRecovery) throw new Error(`the lost-commit check reached ${check.server}, a standby`);
      return check;
    } catch (error) {
      if (attempt >= 30) throw error;
      await sleep(1_000);
    }
  }
}

/** Lost acknowledgements counted by the member that gave them, named by `podAt` (pure). */
export function lostByMember(lost, podAt) {
  const counts = {};
  for (const a of lost) {
    const member = podAt[a.server] ?? a.server ?? 'unknown';
    counts[member] = (counts[member] ?? 0) + 1;
  }
  return counts;
}

/**
 * What each standby had replayed, as the primary at `address` sees it: a lost commit in async
 * mode is one no standby had, so this says whether the loss was a moment's lag or a standby that
 * was not streaming at all.
 */
async function standbysOf(address, credentials, podAt) {
  const rows = await queryOnce(
    address,
    credentials,
    `select host(client_addr) as addr, state, sync_state,
            pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint as behind
       from pg_stat_replication`,
  );
  return rows.map((r) => ({
    member: podAt[r.addr] ?? r.addr,
    state: r.state,
    sync: r.sync_state,
    replayBehindBytes: r.behind == null ? null : Number(r.behind),
  }));
}

/** The longest gap between acknowledgements around `from`, with where it ended (pure). */
export function gapAround(times, from, to) {
  const gap = longestGap(times, from, to);
  let previous = from;
  for (const t of times) {
    if (t <= from) {
      previous = t;
      continue;
    }
    if (t > to) break;
    if (t - previous === gap) return { gap, endedAt: t };
    previous = t;
  }
  return { gap, endedAt: null };
}

/**
 * The fault of each row: `inject` returns `restore` (undo it after the trial) and `done` (the
 * fault has run its course: until then, writes the old primary still takes, as a Pod draining
 * after its delete request does, are no recovery yet).
 */
const FAULTS = {
  'pod-deleted': async ({ env, ns, old }) => {
    const pods = env.client.resource('v1', 'Pod');
    const pod = await pods.get(old.pod, { namespace: ns });
    // Its processes, not its API object: a Pod without grace leaves the API at once, while the
    // kubelet stops its containers after.
    const pids = (await podProcesses(env.cp, pod)).map((p) => p.pid);
    await pods.delete(old.pod, { namespace: ns });
    return {
      done: async () =>
        pids.every((pid) => !isProcessAlive(pid)) &&
        (await pods.get(old.pod, { namespace: ns }).catch(() => undefined))?.metadata?.uid !== pod.metadata.uid,
    };
  },
  'node-power-off': async ({ env, old, cluster }) => {
    const node = env.cp.realNodes.find((n) => n.name === old.node);
    if (!node) throw new Error(`the primary ${old.pod} is not on a real node (${old.node})`);
    await node.powerOff();
    return { restore: () => node.powerOn(), done: primaryMoved(cluster, old), lostNode: node.name };
  },
  'postgres-killed': async ({ env, ns, old }) => {
    const pod = await env.client.resource('v1', 'Pod').get(old.pod, { namespace: ns });
    await killPostmaster(env.cp, pod);
    return {};
  },
  switchover: async ({ cluster, old }) => {
    await cluster.switchover();
    return { done: primaryMoved(cluster, old) };
  },
};

/**
 * The primary the system names, asked for up to 30 s: right after a fault a system may name none
 * for a moment (Patroni's role label moves after the lock), which is no failure of the trial.
 */
export async function primarySoon(cluster) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await cluster.primary();
    } catch (error) {
      if (attempt >= 60) throw error;
      await sleep(500);
    }
  }
}

async function operatorOn(env, system, node) {
  for (const full of await system.operatorPods(env)) {
    const [namespace, name] = full.split('/');
    const pod = await env.client.resource('v1', 'Pod').get(name, { namespace });
    if (pod.spec?.nodeName === node) return true;
  }
  return false;
}

const primaryMoved = (cluster, old) => async () => (await cluster.primary().catch(() => old)).pod !== old.pod;

/**
 * @param entry the system's running cluster: { system, cluster, spec, target, writer, watcher }
 * @param row a fault row of PEER_ROWS
 * @param trial the number that tags the trial's rows
 */
export async function runFaultTrial(
  env,
  entry,
  row,
  trial,
  { log = () => {}, settleMs = 180_000, healMs = 600_000 } = {},
) {
  const { system, cluster, spec, writer, watcher } = entry;
  const result = { system: system.name, row: row.row, trial, ok: false };
  let restore;
  const probe = { current: undefined };
  let endpoints;
  try {
    await cluster.waitReady(healMs);
    const old = await primarySoon(cluster);
    result.primary = old.pod;
    const pods = env.client.resource('v1', 'Pod');
    const others = [];
    const podAt = {};
    for (const name of await cluster.instancePods()) {
      const ip = (await pods.get(name, { namespace: spec.namespace })).status?.podIP;
      if (ip) podAt[ip] = name;
      if (ip && name !== old.pod) others.push(`${ip}:5432`);
    }
    writer.resume(trial);
    const warm = performance.now();
    if (!(await until(() => writer.firstAckAfter(warm) && performance.now() - warm > 2_000, 60_000)))
      throw new Error(`no write acknowledged through ${entry.target.address} in 60 s`);
    probe.current = new WritableProbe(others, entry.target, trial, { continuous: true });
    const oldIp = (await pods.get(old.pod, { namespace: spec.namespace })).status?.podIP;
    entry.serviceName ??= await serviceAt(env.client, spec.namespace, entry.target.address.split(':')[0]);
    endpoints = watchEndpoints(env.client, spec.namespace, entry.serviceName);
    await sleep(500); // the probe's connections open
    if (oldIp)
      result.standbysAtFault = await standbysOf(`${oldIp}:5432`, entry.target, podAt).catch((error) => ({
        error: error.message,
      }));
    const injectedAt = performance.now();
    const fault = await FAULTS[row.key]({ env, ns: spec.namespace, old, cluster });
    restore = fault.restore;
    // An operator that went down with the node waits for its own Pod's eviction (300 s) first.
    if (fault.lostNode) result.operatorOnLostNode = await operatorOn(env, system, fault.lostNode);
    result.injectMs = round1(performance.now() - injectedAt);
    if (fault.done && !(await until(fault.done, settleMs)))
      throw new Error(`the ${row.key} fault did not run its course within ${settleMs / 1000} s`);
    const doneAt = performance.now();
    // Writes flow again: a client acknowledgement after the fault ran its course, and recent.
    const flowing = await until(() => {
      const last = writer.acks.at(-1);
      return last && last.at > Math.max(injectedAt + 50, doneAt) && performance.now() - last.at < 500;
    }, settleMs);
    if (!flowing) throw new Error(`the client's writes did not resume within ${settleMs / 1000} s`);
    await sleep(1_000);
    await writer.pause();
    const end = performance.now();
    const { gap, endedAt } = gapAround(
      writer.acksOf(trial).map((a) => a.at),
      injectedAt,
      end,
    );
    result.clientGapMs = round1(gap);
    result.clientMs = endedAt == null ? null : round1(endedAt - injectedAt);
    const writable = probe.current.firstAckAfter(injectedAt);
    result.writableMs = writable ? round1(writable.at - injectedAt) : null;
    const routed = endpoints.firstOther(injectedAt, oldIp);
    result.endpointMs = routed === undefined ? null : round1(routed - injectedAt);
    const after = await primarySoon(cluster);
    result.primaryAfter = after.pod;
    result.primaryChanged = after.pod !== old.pod;
    const check = await lostCommitsSoon(writer, trial, entry.target);
    result.acked = writer.acksOf(trial).length;
    result.lost = check.lost.length;
    result.lostSeqs = check.lost.slice(0, 20).map((a) => a.seq);
    result.lostBy = lostByMember(check.lost, podAt);
    result.checkedOn = podAt[check.server] ?? check.server;
    result.splitBrain = watcher.violations().filter((v) => v.at >= injectedAt - 1_000 && v.at <= end);
    result.blindSpans = watcher.blindSpans(injectedAt - 1_000, end);
    result.ok = true;
    const s = (ms) => (ms == null ? '-' : `${(ms / 1000).toFixed(2)} s`);
    log(
      `  ${system.name} row ${row.row} trial ${trial}: ${old.pod} → ${after.pod}; longest client gap ${s(result.clientGapMs)}, ` +
        `writes resumed ${s(result.clientMs)}, another member writable ${s(result.writableMs)}, ` +
        `Service endpoints moved ${s(result.endpointMs)}; ` +
        `${result.acked} acked, ${result.lost} lost, ${result.splitBrain.length} split-brain moments`,
    );
    if (result.lost > 0)
      log(
        `    lost by member ${JSON.stringify(result.lostBy)}, checked on ${result.checkedOn}; ` +
          `standbys at the fault ${JSON.stringify(result.standbysAtFault)}`,
      );
  } catch (error) {
    result.error = error.message;
    log(`  ${system.name} row ${row.row} trial ${trial}: FAILED: ${error.message}`);
  } finally {
    await probe.current?.stop();
    await endpoints?.stop();
    await writer.pause();
    const restoredAt = performance.now();
    try {
      await restore?.();
      await cluster.waitReady(healMs);
      result.healMs = round1(performance.now() - restoredAt);
    } catch (error) {
      result.healError = error.message;
    }
  }
  return result;
}
