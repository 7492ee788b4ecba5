// One failover trial, the same for every system: with the libpq client committing through
// whichever member accepts writes, a power loss of the primary's member. Two figures: when the
// database took writes again (a probe connected straight to each surviving member, so no search
// for the primary is in it) and when the client's first commit was acknowledged by another member
// (RTO, which adds the client's search: libpq's host list with target_session_attrs=read-write).
// Lost commits are those acknowledged in the trial that the new primary lacks. Then the killed
// member comes back and the cluster heals before the next trial.
import { setTimeout as sleep } from 'node:timers/promises';
import { round1 } from '../../scripts/bench-stats.mjs';
import { WritableProbe } from './writable-probe.mjs';
import { lostCommits } from './writer.mjs';

export { round1 };

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
 * Waits until `system` is healthy, points `writer` at every member (in a fixed order, by name, as
 * one would list them in a connection string) and has it write rows of `trial` until the primary
 * has acknowledged writes for `warmupMs`. Returns the primary and the members.
 */
export async function warmUp(system, writer, trial, warmupMs = 2_000) {
  await system.waitHealthy();
  const old = await system.primary();
  const members = (await system.instances()).sort((a, b) => a.name.localeCompare(b.name));
  writer.setHosts(members.map((m) => m.address));
  writer.resume(trial);
  // Writes must be flowing to the old primary before the kill, or there is nothing to recover.
  const warmStart = performance.now();
  while (!writer.firstAckAfter(warmStart) || performance.now() - warmStart < warmupMs) {
    if (performance.now() - warmStart > 60_000) throw new Error(`no write acknowledged by ${old.name} in 60 s`);
    await sleep(20);
  }
  return { old, members };
}

/**
 * The acknowledged commits of `trial` that the primary at `address` lacks: how many, the first
 * sequence numbers, and when each was acknowledged relative to `since` (negative: before it).
 */
export async function lostReport(writer, trial, address, credentials, since) {
  const lost = await lostCommits(writer, trial, address, credentials);
  const lostSet = new Set(lost);
  return {
    acked: writer.acksOf(trial).length,
    lost: lost.length,
    lostSeqs: lost.slice(0, 20),
    lostAckedAtMs: writer
      .acksOf(trial)
      .filter((a) => lostSet.has(a.seq))
      .slice(0, 20)
      .map((a) => round1(a.at - since)),
  };
}

/**
 * @param system the adapter (patroni.mjs, kanri.mjs)
 * @param writer a LibpqWriter with that system's credentials
 * @param trial the trial number (tags its rows)
 * @param offsetMs extra wait after the warm-up (see killOffsets)
 */
export async function runTrial(
  system,
  writer,
  trial,
  { log = () => {}, warmupMs = 2_000, afterMs = 1_000, offsetMs = 0 } = {},
) {
  const result = { system: system.name, trial, ok: false };
  const { old, members } = await warmUp(system, writer, trial, warmupMs);
  result.killed = old.name;
  const survivors = members.filter((m) => m.address !== old.address).map((m) => m.address);
  const probe = new WritableProbe(survivors, system.credentials, trial);
  for (let i = 0; probe.attempts < survivors.length && i < 200; i++) await sleep(10); // its connections open
  await sleep(offsetMs);
  result.offsetMs = offsetMs;
  // Where the time goes, when the system can tell: the age of the leader lock at the kill, when
  // another member took it.
  const mark = (await system.beforeKill?.().catch(() => undefined)) ?? {};
  const killedAt = performance.now();
  const killedWall = Date.now();
  // How the member was stopped: at one instant (a cgroup freezer) or process by process.
  result.frozenBy = (await system.kill(old.name))?.frozenBy;
  result.killMs = round1(performance.now() - killedAt);
  let ack = writer.firstAckAfter(killedAt, old.address);
  while ((!ack || !probe.writableAfter(killedAt)) && performance.now() - killedAt < 180_000) {
    await sleep(5);
    ack = writer.firstAckAfter(killedAt, old.address);
  }
  try {
    const writable = probe.writableAfter(killedAt);
    if (!writable) throw new Error('no surviving member took a write within 180 s of the kill');
    if (!ack) throw new Error('the client had no write acknowledged by another member within 180 s of the kill');
    result.writableMs = round1(writable.at - killedAt);
    result.rtoMs = round1(ack.at - killedAt);
    result.clientSearchMs = round1(ack.at - writable.at);
    result.newPrimary = ack.address;
    if (writable.address !== ack.address) result.probeSawWritable = writable.address; // two writable members: look
    await sleep(afterMs);
    await writer.pause();
    const timeline = await system.timeline?.(mark, killedWall, ack.address).catch(() => undefined);
    if (timeline) Object.assign(result, timeline);
    Object.assign(result, await lostReport(writer, trial, ack.address, system.credentials, killedAt));
    result.ok = true;
    log(
      `  ${system.name} trial ${trial}: killed ${old.name}; writable at ${writable.address} after ` +
        `${(result.writableMs / 1000).toFixed(2)} s, the client's first write there after ${(result.rtoMs / 1000).toFixed(2)} s; ` +
        `${result.acked} acked, ${result.lost} lost`,
    );
  } catch (error) {
    result.error = error.message;
    log(`  ${system.name} trial ${trial}: FAILED: ${error.message}`);
  } finally {
    await probe.stop();
    await writer.pause();
    const restoredAt = performance.now();
    await system.restore(old.name);
    await system.waitHealthy();
    result.healMs = round1(performance.now() - restoredAt);
  }
  return result;
}
