// Per row and system, the figures of the failure matrix from its trials, the run's status and the
// table: pure.
import { describeBlindSpans } from '../failover/split-brain-check.mjs';
import { medianOf } from '../failover/summary.mjs';

const stats = (values) => {
  const xs = values.filter((v) => v != null);
  return { median: medianOf(xs), max: xs.length ? Math.max(...xs) : null, n: xs.length };
};

/** Whether `settings` (a system's `settings`) run a failsafe mode: Kanri's `failsafeMode`, Patroni's `failsafe_mode`. */
export const runsFailsafe = (settings) => Boolean(settings?.failsafeMode ?? settings?.failsafe_mode);

/**
 * Whether a row's fault should move the primary of a system with `settings`. A primary cut off
 * from its store alone (row 4) keeps its role where a failsafe mode lets the replicas vouch for
 * it: there the figure is the longest write gap, as on the rows without a failover.
 *
 * @example
 * expectsFailover({ failover: true, unlessFailsafe: true }, { failsafeMode: true }); // false
 */
export function expectsFailover(kind, settings) {
  return Boolean(kind.failover) && !(kind.unlessFailsafe && runsFailsafe(settings));
}

/**
 * A trial as the row counts it. One that ran to its end on a row where the primary should have
 * moved, but no other member took a write (or the client stayed on the old primary), did not do
 * what the row measures: it is a failed trial, not a success with its time missing.
 *
 * @example
 * judgeTrial({ ok: true, failedOver: false, writableMs: null }, true).ok; // false
 */
export function judgeTrial(result, failoverExpected) {
  if (!result.ok || !failoverExpected) return result;
  if (result.failedOver && result.writableMs != null) return result;
  const where =
    result.writableMs == null
      ? 'no other member took a write'
      : `another member took writes after ${(result.writableMs / 1000).toFixed(2)} s, but the client stayed on the old primary`;
  return { ...result, ok: false, error: `no failover: ${where}` };
}

/**
 * The figures of one row for one system (see bench/README.md, bench:failures), over the trials
 * `judgeTrial` lets count. `splitBrainMoments` is null when the watcher was blind to a member
 * during a counted trial (`blindSpans` says where): it could not have seen two primaries there.
 */
export function summarizeRow(results, { failoverExpected }) {
  const judged = results.map((r) => judgeTrial(r, failoverExpected));
  const ok = judged.filter((r) => r.ok);
  const blind = ok.flatMap((r) => (r.blindSpans ?? []).map((s) => ({ trial: r.trial, ...s })));
  return {
    failoverExpected,
    trials: judged.length,
    okTrials: ok.length,
    writableMs: stats(ok.map((r) => r.writableMs)),
    clientMs: stats(ok.map((r) => r.clientMs)),
    dbGapMs: stats(ok.map((r) => r.dbGapMs)),
    clientGapMs: stats(ok.map((r) => r.clientGapMs)),
    failovers: ok.filter((r) => r.failedOver).length,
    commitsAcked: ok.reduce((s, r) => s + r.acked, 0),
    commitsLost: ok.reduce((s, r) => s + r.lost, 0),
    trialsWithLoss: ok.filter((r) => r.lost > 0).length,
    splitBrainMoments: blind.length ? null : ok.reduce((s, r) => s + r.splitBrain.length, 0),
    splitBrainSeen: ok.reduce((s, r) => s + r.splitBrain.length, 0),
    blindSpans: blind,
    errors: judged.filter((r) => !r.ok).map((r) => r.error),
    /** Trials after which the cluster did not heal within 180 s (the system was started anew). */
    notHealed: judged.filter((r) => r.healError).map((r) => r.healError),
    trialResults: judged,
  };
}

/**
 * The run's status: `ok` when every measured row has every trial of every system counted and the
 * watcher saw every member throughout; otherwise `failed`, with the reasons.
 *
 * @example
 * runStatus([{ row: 3, kanri: { okTrials: 2, trials: 3, blindSpans: [] } }], ['kanri'], 3);
 * // { status: 'failed', reasons: ['row 3 kanri: 1 of 3 trials failed'] }
 */
export function runStatus(rows, systems, trials) {
  const reasons = [];
  for (const row of rows) {
    if (row.notMeasured) continue;
    for (const name of systems) {
      const r = row[name];
      if (!r) {
        reasons.push(`row ${row.row} ${name}: not run`);
        continue;
      }
      if (r.okTrials < trials)
        reasons.push(`row ${row.row} ${name}: ${trials - r.okTrials} of ${trials} trials failed`);
      if (r.blindSpans.length)
        reasons.push(`row ${row.row} ${name}: the split-brain watcher was blind (${r.blindSpans.length} spans)`);
    }
  }
  return { status: reasons.length ? 'failed' : 'ok', reasons };
}

const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));
const pair = (s) => (s.n ? `${secs(s.median)} (${secs(s.max)})` : 'none');

/**
 * The readable table: per row and system the row's figure (time to a new primary, or the longest
 * write gap where no failover is expected), at the database and at the client, median (max).
 */
export function formatTable(rows, systems) {
  const lines = [
    'row  failure                                    system   ok/all  figure         database s med (max)  client s med (max)  failovers  acked    lost  split-brain',
  ];
  for (const row of rows) {
    if (row.notMeasured) {
      lines.push(`${String(row.row).padEnd(4)} ${row.title.slice(0, 42).padEnd(42)} not measured: ${row.notMeasured}`);
      continue;
    }
    for (const name of systems) {
      const r = row[name];
      if (!r) continue;
      const gap = !r.failoverExpected;
      lines.push(
        `${String(row.row).padEnd(4)} ${row.title.slice(0, 42).padEnd(42)} ${name.padEnd(8)} ${`${r.okTrials}/${r.trials}`.padEnd(7)} ` +
          `${(gap ? 'longest gap' : 'new primary').padEnd(14)} ${pair(gap ? r.dbGapMs : r.writableMs).padEnd(21)} ` +
          `${pair(gap ? r.clientGapMs : r.clientMs).padEnd(19)} ${`${r.failovers}/${r.okTrials}`.padEnd(10)} ` +
          `${String(r.commitsAcked).padEnd(8)} ${String(r.commitsLost).padEnd(5)} ` +
          `${r.splitBrainMoments ?? `${r.splitBrainSeen}, blind`}`,
      );
      if (!gap && r.okTrials) {
        lines.push(`${''.padEnd(56)} (longest gap: database ${pair(r.dbGapMs)}, client ${pair(r.clientGapMs)})`);
      }
      for (const error of r.errors) lines.push(`${''.padEnd(56)} failed: ${String(error).split('\n')[0]}`);
      for (const error of r.notHealed) lines.push(`${''.padEnd(56)} not healed: ${String(error).split('\n')[0]}`);
      for (const line of describeBlindSpans(r.blindSpans))
        lines.push(`${''.padEnd(56)} split-brain watcher blind: ${line}`);
    }
  }
  return lines.join('\n');
}
