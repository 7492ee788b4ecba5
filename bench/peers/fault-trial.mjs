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
  const retried = [];
  for (let attempt = 0; ; attempt++) {
    try {
      const check = await checkCommits(writer, trial, target.address, target);
      if (check.inRecovery) throw new Error(`the lost-commit check reached ${check.server}, a standby`);
      return { ...check, retried };
    } catch (error) {
      if (attempt >= 30) throw error;
      retried.push(error.message);
      await sleep(1_000);
    }
  }
}

/**
 * The client's failed attempts between `from` and `to` (pure): how many of each kind, and the
 * first few with their time after `from`, which says what filled a gap (refusals retried at once,
 * or connect timeouts to an address nobody answered).
 */
export function clientErrors(errors, from, to, first = 8) {
  const within = errors.filter((e) => e.at >= from && e.at <= to);
  const counts = {};
  for (const e of within) counts[`${e.step} ${e.reason}`] = (counts[`${e.step} ${e.reason}`] ?? 0) + 1;
  return {
    counts,
    first: within.slice(0, first).map((e) => ({ ms: round1(e.at - from), step: e.step, reason: e.reason })),
  };
}

/**
 * Why a trial's gap is not whole, or null when it is (pure). The window closes 1 s after the
 * client's writes resume; if the primary the lost-commit check then reaches (`checkedOn`, a Pod
 * name, undefined when its address is no member's) is not the one the window ended on, the system
 * moved its primary again after that, and the outage of that second move fell outside the window:
 * the gap measured would understate the trial.
 *
 * @example
 * gapCutShort('peers-1', 'peers-2'); // 'the primary moved again after the trial's window (peers-1 → peers-2) …'
 * gapCutShort('peers-1', 'peers-1'); // null
 */
export function gapCutShort(primaryAfter, checkedOn) {
  if (checkedOn == null || checkedOn === primaryAfter) return null;
  return `the primary moved again after the trial's window (${primaryAfter} → ${checkedOn}): the gap measured there is cut short, so it is left out`;
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

/** How long a node-loss trial waits for a new primary and for the client's writes. */
export const NODE_LOSS_SETTLE_MS = 480_000;

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
    return {
      restore: () => node.powerOn(),
      done: primaryMoved(cluster, old),
      lostNode: node.name,
      // An operator that went down with the node comes back only after its own Pod's eviction
      // (300 s of toleration for an unreachable node) and then fails over: the row waits for
      // that, so it is measured, not cut off.
      settleMs: NODE_LOSS_SETTLE_MS,
    };
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

/** How long a cluster must stay Ready, on one primary, before a trial starts on it. */
export const STEADY_MS = 10_000;

/** Standbys the primary behind the read-write Service streams to now. */
async function streamingStandbys(target) {
  const rows = await queryOnce(
    target.address,
    target,
    "select count(*)::int as n from pg_stat_replication where state = 'streaming'",
  );
  return rows[0]?.n ?? 0;
}

/**
 * Ready now, every standby streaming, and the same still true on the same primary `holdMs` later.
 * A system's own Ready can run ahead of its standbys (one still rewinding or not yet connected),
 * and a node powered on again can leave stale Pod and cluster status for a moment; a power-off in
 * one system's trial is also a fault for the others' instances on that node. A trial started then
 * measures the tail of the last one, on fewer standbys than it names.
 *
 * @param entry the system's running cluster: { cluster, spec, target }
 */
export async function waitSteady({ cluster, spec, target }, timeoutMs, holdMs = STEADY_MS) {
  const deadline = performance.now() + timeoutMs;
  const standbys = spec.instances - 1;
  /** The primary when Ready with every standby streaming; otherwise throws why not. */
  const steadyNow = async () => {
    await cluster.waitReady(Math.max(1_000, deadline - performance.now()));
    const streaming = await streamingStandbys(target);
    if (streaming < standbys) throw new Error(`${streaming} of ${standbys} standbys streaming`);
    return primarySoon(cluster);
  };
  for (;;) {
    let reason;
    try {
      const before = await steadyNow();
      await sleep(holdMs);
      const after = await steadyNow();
      if (after.pod === before.pod) return before;
      reason = `the primary moved from ${before.pod} to ${after.pod}`;
    } catch (error) {
      reason = error.message;
    }
    if (performance.now() > deadline)
      throw new Error(
        `not Ready with every standby streaming for ${holdMs / 1000} s within ${timeoutMs / 1000} s: ${reason}`,
      );
    await sleep(1_000);
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
  { log = () => {}, settleMs = 180_000, healMs = 300_000 } = {},
) {
  const { system, cluster, spec, writer, watcher } = entry;
  const result = { system: system.name, row: row.row, trial, ok: false };
  let restore;
  const probe = { current: undefined };
  let endpoints;
  try {
    const old = await waitSteady(entry, healMs).catch((error) => {
      // Not healed from an earlier trial (its own or another system's on a shared node).
      result.startError = error.message;
      throw error;
    });
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
    const settle = fault.settleMs ?? settleMs;
    if (fault.done && !(await until(fault.done, settle)))
      throw new Error(`the ${row.key} fault did not run its course within ${settle / 1000} s`);
    const doneAt = performance.now();
    // Writes flow again: a client acknowledgement after the fault ran its course, and recent.
    const flowing = await until(() => {
      const last = writer.acks.at(-1);
      return last && last.at > Math.max(injectedAt + 50, doneAt) && performance.now() - last.at < 500;
    }, settle);
    if (!flowing) throw new Error(`the client's writes did not resume within ${settle / 1000} s`);
    await sleep(1_000);
    await writer.pause();
    const end = performance.now();
    const { gap, endedAt } = gapAround(
      writer.acksOf(trial).map((a) => a.at),
      injectedAt,
      end,
    );
    result.clientGapMs = round1(gap);
    result.clientErrors = clientErrors(writer.errors, injectedAt, end);
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
    // A gap cut short is no figure: left out of the medians and the pairs, its lost commits kept.
    const cutShort = gapCutShort(after.pod, podAt[check.server]);
    if (cutShort) {
      result.gapCutShort = cutShort;
      result.windowGapMs = result.clientGapMs;
      result.clientGapMs = null;
      result.clientMs = null;
    }
    // Answers refused before the one counted (a standby behind the Service, no connection).
    if (check.retried.length > 0) result.checkRetried = check.retried;
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
    if (cutShort) log(`    ${cutShort}`);
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
