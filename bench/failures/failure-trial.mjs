// One trial of the failure matrix, the same for every system and row: with the libpq client
// committing through whichever member takes writes (as in bench:failover), a continuous writable
// probe on every member and the system's split-brain watcher running, one failure kind
// (kinds.mjs) is injected into the primary's member at the trial's offset in the renew cycle.
// Figures (all from the injection, performance.now()):
// - writableMs / clientMs: the first write acknowledged by another member, to the probe
//   (straight at each member) and to the client (libpq's search included); null: no failover;
// - dbGapMs / clientGapMs: the longest time without an acknowledged write, to the probe (any
//   member) and to the client, from the last write before the injection until writes flow again;
// - lost: the trial's acknowledged commits that the primary at the end lacks;
// - splitBrain: the watcher's moments (two members taking writes) during the trial, and
//   blindSpans: where the watcher began no probe of a member for over 10 s, so saw nothing there.
// Whether the trial counts (a failover row that never failed over does not) is summary.mjs's call.
import { setTimeout as sleep } from 'node:timers/promises';
import { describeBlindSpans } from '../failover/split-brain-check.mjs';
import { lostReport, round1, warmUp } from '../failover/trial.mjs';
import { WritableProbe } from '../failover/writable-probe.mjs';
import { longestGap } from './gaps.mjs';

async function until(condition, timeoutMs) {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > timeoutMs) return false;
    await sleep(5);
  }
  return true;
}

/**
 * @param system the adapter (failover/patroni.mjs, failover/kanri.mjs) with `faults`
 * @param writer the system's LibpqWriter
 * @param watcher the system's running SplitBrainWatcher
 * @param kind a row of FAILURE_KINDS
 * @param decideMs how long a failover row waits for another member to take writes before it lifts the fault
 */
export async function runFailureTrial(
  system,
  writer,
  watcher,
  kind,
  trial,
  { log = () => {}, offsetMs = 0, decideMs = 60_000, settleMs = 60_000, afterMs = 1_000 } = {},
) {
  const result = { system: system.name, row: kind.row, trial, ok: false, offsetMs };
  const { old, members } = await warmUp(system, writer, trial);
  result.primary = old.name;
  const probe = new WritableProbe(
    members.map((m) => m.address),
    system.credentials,
    trial,
    { continuous: true },
  );
  for (let i = 0; probe.attempts < members.length && i < 200; i++) await sleep(10); // its connections open
  let action = {};
  let injectedAt;
  let liftedAt;
  const lift = async () => {
    if (liftedAt !== undefined || injectedAt === undefined) return;
    liftedAt = performance.now();
    await action.lift?.();
    result.liftedAtMs = round1(liftedAt - injectedAt);
  };
  try {
    action = await kind.prepare(system, old);
    if (action.detail) result.detail = action.detail;
    await sleep(offsetMs);
    injectedAt = performance.now();
    await action.inject();
    result.injectMs = round1(performance.now() - injectedAt);
    if (kind.failover) {
      // Decided once another member took a write; a stall or a cut ends then, as an operator's
      // fix would come after the failover.
      await until(() => probe.firstAckAfter(injectedAt, old.address), decideMs);
      await lift();
      // The client follows a failover the probe saw; with none there is nothing to wait for.
      if (probe.firstAckAfter(injectedAt, old.address)) {
        await until(() => writer.firstAckAfter(injectedAt, old.address), settleMs);
      }
    } else {
      await sleep(kind.holdMs);
      await lift();
    }
    // Writes flow again: the client's last acknowledgement is after the lift and recent.
    const flowing = await until(() => {
      const last = writer.acks.at(-1);
      return last && last.at > Math.max(injectedAt, liftedAt ?? 0) && performance.now() - last.at < 500;
    }, settleMs);
    if (!flowing) throw new Error(`the client's writes did not resume within ${settleMs / 1000} s of the lift`);
    await sleep(afterMs);
    await writer.pause();
    const end = performance.now();
    const probeAck = probe.firstAckAfter(injectedAt, old.address);
    const clientAck = writer.firstAckAfter(injectedAt, old.address);
    result.writableMs = probeAck ? round1(probeAck.at - injectedAt) : null;
    result.clientMs = clientAck ? round1(clientAck.at - injectedAt) : null;
    result.dbGapMs = round1(
      longestGap(
        probe.acks.map((a) => a.at),
        injectedAt,
        end,
      ),
    );
    result.clientGapMs = round1(
      longestGap(
        writer.acksOf(trial).map((a) => a.at),
        injectedAt,
        end,
      ),
    );
    const primaryNow = writer.acks.at(-1).address;
    result.primaryAfter = members.find((m) => m.address === primaryNow)?.name ?? primaryNow;
    result.failedOver = primaryNow !== old.address;
    Object.assign(result, await lostReport(writer, trial, primaryNow, system.credentials, injectedAt));
    result.splitBrain = watcher.violations().filter((v) => v.at >= injectedAt - 1_000 && v.at <= end);
    result.blindSpans = watcher.blindSpans(injectedAt - 1_000, end);
    result.ok = true;
    const s = (ms) => (ms == null ? '-' : `${(ms / 1000).toFixed(2)} s`);
    log(
      `  ${system.name} row ${kind.row} trial ${trial}: ${old.name} → ${result.primaryAfter}; ` +
        `new primary writable ${s(result.writableMs)}, client ${s(result.clientMs)}; ` +
        `longest gap database ${s(result.dbGapMs)}, client ${s(result.clientGapMs)}; ` +
        `${result.acked} acked, ${result.lost} lost, ${result.splitBrain.length} split-brain moments` +
        (result.blindSpans.length
          ? ` (the watcher was blind: ${describeBlindSpans(result.blindSpans).join('; ')})`
          : ''),
    );
  } catch (error) {
    result.error = error.message;
    log(`  ${system.name} row ${kind.row} trial ${trial}: FAILED: ${error.message}`);
  } finally {
    await lift().catch((error) => log(`  lifting: ${error.message}`));
    await probe.stop();
    await writer.pause();
    const restoredAt = performance.now();
    try {
      await action.restore?.();
      await system.waitHealthy();
      result.healMs = round1(performance.now() - restoredAt);
    } catch (error) {
      // The figures stand; the caller starts the system anew before its next trial.
      result.healError = error.message;
    }
  }
  return result;
}
