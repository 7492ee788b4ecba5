// One failover trial, the same for every system: with the writer committing through the current
// primary, a power loss of the primary's member; RTO is the time from the kill to the first
// commit acknowledged by another instance; lost commits are those acknowledged in the trial that
// the new primary lacks. Then the killed member comes back and the cluster heals before the next
// trial.
import { setTimeout as sleep } from 'node:timers/promises';
import { lostCommits } from './writer.mjs';

const round1 = (x) => (x == null ? null : Math.round(x * 10) / 10);

/**
 * When in each trial the kill falls, after the warm-up: the leader renews its lock every
 * `periodMs`, and a real failure is as likely at any point of that cycle. Without this offset the
 * trial's own rhythm (wait until healthy, warm up for a fixed time) fixes the phase: in one
 * 20-trial run Kanri's lock was 0.47–0.98 s old at 19 of 20 kills (1.59 s at one), never younger. Stratified
 * (one offset in each 1/trials of the period) and shuffled with `random`, so a few trials cover
 * the cycle evenly; the same list serves every system.
 */
export function killOffsets(trials, periodMs, random) {
  const offsets = Array.from({ length: trials }, (_, i) => Math.round(((i + random()) * periodMs) / trials));
  for (let i = offsets.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [offsets[i], offsets[j]] = [offsets[j], offsets[i]];
  }
  return offsets;
}

/**
 * @param system the adapter (patroni.mjs, kanri.mjs)
 * @param writer a Writer on that system
 * @param trial the trial number (tags its rows)
 * @param offsetMs extra wait after the warm-up (see killOffsets)
 */
export async function runTrial(
  system,
  writer,
  trial,
  { log = () => {}, warmupMs = 2_000, afterMs = 1_000, offsetMs = 0 } = {},
) {
  const result = { trial, ok: false };
  await system.waitHealthy();
  const old = await system.primary();
  result.killed = old.name;
  writer.resume(trial);
  // Writes must be flowing to the old primary before the kill, or there is nothing to recover.
  const warmStart = performance.now();
  while (!writer.firstAckAfter(warmStart) || performance.now() - warmStart < warmupMs) {
    if (performance.now() - warmStart > 60_000) throw new Error(`no write acknowledged by ${old.name} in 60 s`);
    await sleep(20);
  }
  await sleep(offsetMs);
  result.offsetMs = offsetMs;
  // Where the time goes, when the system can tell: the age of the leader lock at the kill, when
  // another member took it.
  const mark = (await system.beforeKill?.().catch(() => undefined)) ?? {};
  const killedAt = performance.now();
  const killedWall = Date.now();
  await system.kill(old.name);
  result.killMs = round1(performance.now() - killedAt);
  let ack = writer.firstAckAfter(killedAt, old.address);
  while (!ack && performance.now() - killedAt < 180_000) {
    await sleep(5);
    ack = writer.firstAckAfter(killedAt, old.address);
  }
  try {
    if (!ack) throw new Error('no write succeeded on another instance within 180 s of the kill');
    result.rtoMs = round1(ack.at - killedAt);
    result.newPrimary = ack.address;
    await sleep(afterMs);
    await writer.pause();
    const timeline = await system.timeline?.(mark, killedWall, ack.address).catch(() => undefined);
    if (timeline) Object.assign(result, timeline);
    result.acked = writer.acksOf(trial).length;
    const lost = await lostCommits(writer, trial, ack.address, system.credentials);
    result.lost = lost.length;
    result.lostSeqs = lost.slice(0, 20);
    // When each lost commit was acknowledged, relative to the kill (negative: before it).
    const lostSet = new Set(lost);
    result.lostAckedAtMs = writer
      .acksOf(trial)
      .filter((a) => lostSet.has(a.seq))
      .slice(0, 20)
      .map((a) => round1(a.at - killedAt));
    result.ok = true;
    log(
      `  trial ${trial}: killed ${old.name}, writes resumed on ${ack.address} after ${(result.rtoMs / 1000).toFixed(2)} s, ` +
        `${result.acked} acked, ${result.lost} lost`,
    );
  } catch (error) {
    result.error = error.message;
    log(`  trial ${trial}: FAILED: ${error.message}`);
  } finally {
    await writer.pause();
    const restoredAt = performance.now();
    await system.restore(old.name);
    await system.waitHealthy();
    result.healMs = round1(performance.now() - restoredAt);
  }
  return result;
}

function medianOf(values) {
  const xs = values.filter((v) => v != null).sort((a, b) => a - b);
  if (!xs.length) return null;
  const mid = Math.floor(xs.length / 2);
  return round1(xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2);
}

export function summarizeTrials(results) {
  const ok = results.filter((r) => r.ok);
  const rtos = ok.map((r) => r.rtoMs).sort((a, b) => a - b);
  const mid = Math.floor(rtos.length / 2);
  const median = rtos.length ? (rtos.length % 2 ? rtos[mid] : (rtos[mid - 1] + rtos[mid]) / 2) : null;
  return {
    trials: results.length,
    okTrials: ok.length,
    rtoMsMedian: round1(median),
    rtoMsMin: rtos.length ? rtos[0] : null,
    rtoMsMax: rtos.length ? rtos.at(-1) : null,
    rtoMs: ok.map((r) => r.rtoMs),
    commitsAcked: ok.reduce((s, r) => s + r.acked, 0),
    commitsLost: ok.reduce((s, r) => s + r.lost, 0),
    trialsWithLoss: ok.filter((r) => r.lost > 0).length,
    takeoverMsMedian: medianOf(ok.map((r) => r.takeoverMs)),
    takeoverToWriteMsMedian: medianOf(ok.map((r) => (r.takeoverMs == null ? null : r.rtoMs - r.takeoverMs))),
  };
}
