// Row 5: a rolling update of the instance image under the client's writes. The figure is the
// longest time the client had no acknowledged write from the request until every instance runs
// the new image, and how many times the primary changed on the way (one planned switchover is
// the least a rolling update can do; a system that restarts the primary in place has none but a
// longer gap).
import { setTimeout as sleep } from 'node:timers/promises';
import { round1 } from '../../scripts/bench-stats.mjs';
import { gapAround, lostCommitsSoon, waitSteady } from './fault-trial.mjs';

export async function runRolloutTrial(entry, row, trial, { log = () => {}, timeoutMs = 15 * 60_000 } = {}) {
  const { system, cluster, writer, watcher } = entry;
  const result = { system: system.name, row: row.row, trial, ok: false };
  let watching = true;
  try {
    const primaries = [(await waitSteady(entry, timeoutMs)).pod];
    writer.resume(trial);
    const warm = performance.now();
    while (!writer.firstAckAfter(warm) || performance.now() - warm < 2_000) {
      if (performance.now() - warm > 60_000) throw new Error('no write acknowledged in 60 s');
      await sleep(20);
    }
    const follow = (async () => {
      while (watching) {
        const now = await cluster.primary().catch(() => undefined);
        if (now && now.pod !== primaries.at(-1)) primaries.push(now.pod);
        await sleep(250);
      }
    })();
    const startedAt = performance.now();
    const { from, to } = await cluster.rollImage();
    // A roll to the image already running would measure nothing and pass: refuse it.
    if (!to || from === to) throw new Error(`rollImage asked for ${to}, the image the instances already run`);
    result.images = [from, to];
    await cluster.waitRolled(timeoutMs);
    const rolledAt = performance.now();
    // Writes flow on whatever is primary now, so a gap still open at the end is closed.
    while (!writer.firstAckAfter(rolledAt)) {
      if (performance.now() - rolledAt > 120_000) throw new Error('no write acknowledged after the rollout');
      await sleep(20);
    }
    await sleep(1_000);
    watching = false;
    await follow;
    await writer.pause();
    const end = performance.now();
    result.rolloutMs = round1(rolledAt - startedAt);
    result.clientGapMs = round1(
      gapAround(
        writer.acksOf(trial).map((a) => a.at),
        startedAt,
        end,
      ).gap,
    );
    result.primaryChanges = primaries.length - 1;
    result.primaries = primaries;
    const { lost, server } = await lostCommitsSoon(writer, trial, entry.target);
    result.acked = writer.acksOf(trial).length;
    result.lost = lost.length;
    result.checkedOn = server;
    result.splitBrain = watcher.violations().filter((v) => v.at >= startedAt && v.at <= end);
    result.blindSpans = watcher.blindSpans(startedAt, end);
    result.ok = true;
    log(
      `  ${system.name} row 5 trial ${trial}: rolled in ${(result.rolloutMs / 1000).toFixed(1)} s; longest client gap ` +
        `${(result.clientGapMs / 1000).toFixed(2)} s; ${result.primaryChanges} primary changes (${primaries.join(' → ')}); ` +
        `${result.acked} acked, ${result.lost} lost`,
    );
  } catch (error) {
    result.error = error.message;
    log(`  ${system.name} row 5 trial ${trial}: FAILED: ${error.message}`);
  } finally {
    watching = false;
    await writer.pause();
  }
  return result;
}
