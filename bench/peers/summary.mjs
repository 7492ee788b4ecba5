// Per row and system, the figures of bench:peers from its trials, the paired differences of
// Kanri against each peer, the run's status and the readable table: pure.
import { FAILED, median, pairedDifferences, round1 } from '../../scripts/bench-stats.mjs';

const stats = (values) => {
  const xs = values.filter((v) => v != null);
  return { median: xs.length ? round1(median(xs)) : null, max: xs.length ? Math.max(...xs) : null, n: xs.length };
};

/** The figure each kind of row is judged by, per trial (the paired differences compare it). */
export const ROW_FIGURE = { fault: 'clientGapMs', rollout: 'clientGapMs', ready: 'readyMs', backup: 'backupMs' };

/**
 * One row's figures for one system from its trial results. `splitBrainMoments` is null when the
 * watcher was blind to a member during a counted trial: it could not have seen two primaries then.
 *
 * @example
 * summarizeTrials([{ ok: true, clientGapMs: 900, clientMs: 950, acked: 10, lost: 0, splitBrain: [], blindSpans: [] }], 'fault').clientGapMs;
 * // { median: 900, max: 900, n: 1 }
 */
export function summarizeTrials(results, kind) {
  const ok = results.filter((r) => r.ok);
  const blind = ok.flatMap((r) => r.blindSpans ?? []);
  const common = {
    trials: results.length,
    okTrials: ok.length,
    errors: results.filter((r) => !r.ok).map((r) => r.error),
    notHealed: results.filter((r) => r.healError).map((r) => r.healError),
  };
  if (kind === 'ready') return { ...common, readyMs: stats(ok.map((r) => r.readyMs)) };
  if (kind === 'backup') {
    const figure = (key) => stats(ok.map((r) => r[key]));
    return {
      ...common,
      databaseBytes: figure('databaseBytes'),
      backupMs: figure('backupMs'),
      backupMBps: figure('backupMBps'),
      systemBackupMs: figure('systemBackupMs'),
      storedBytes: figure('storedBytes'),
      restoreMs: figure('restoreMs'),
      restoreMBps: figure('restoreMBps'),
    };
  }
  const moments = ok.reduce((s, r) => s + (r.splitBrain?.length ?? 0), 0);
  const shared = {
    ...common,
    clientGapMs: stats(ok.map((r) => r.clientGapMs)),
    commitsAcked: ok.reduce((s, r) => s + (r.acked ?? 0), 0),
    commitsLost: ok.reduce((s, r) => s + (r.lost ?? 0), 0),
    splitBrainMoments: blind.length ? null : moments,
    splitBrainSeen: moments,
    blindSpans: blind.length,
  };
  if (kind === 'rollout')
    return {
      ...shared,
      primaryChanges: stats(ok.map((r) => r.primaryChanges)),
      rolloutMs: stats(ok.map((r) => r.rolloutMs)),
    };
  return {
    ...shared,
    clientMs: stats(ok.map((r) => r.clientMs)),
    writableMs: stats(ok.map((r) => r.writableMs)),
    endpointMs: stats(ok.map((r) => r.endpointMs)),
    primaryChanges: ok.filter((r) => r.primaryChanged).length,
  };
}

/**
 * Kanri's trial-by-trial difference against each other system on the row's figure (or `figure`;
 * negative: Kanri lower), trial i of one paired with trial i of the other; a failed trial counts
 * against its system (bench-stats.mjs, pairedDifferences).
 */
export function pairAgainstKanri(resultsBySystem, kind, figure = ROW_FIGURE[kind]) {
  const kanri = resultsBySystem.kanri;
  if (!figure || !kanri) return {};
  const value = (r) => (r == null ? null : r.ok ? r[figure] : FAILED);
  const out = {};
  for (const [name, results] of Object.entries(resultsBySystem)) {
    if (name === 'kanri') continue;
    const n = Math.max(kanri.length, results.length);
    out[name] = pairedDifferences(Array.from({ length: n }, (_, i) => [value(kanri[i]), value(results[i])]));
  }
  return out;
}

/**
 * The run's status: `ok` when every row has every trial of every system counted and the watcher
 * saw every member throughout; otherwise `failed`, with the reasons.
 *
 * @example
 * runStatus([{ row: 1, title: 't', kanri: { okTrials: 1, trials: 2, blindSpans: 0 } }], ['kanri']).status; // 'failed'
 */
export function runStatus(rows, systems) {
  const reasons = [];
  for (const row of rows) {
    if (row.notMeasured) continue;
    const label = `row ${row.row}${row.mode ? ` (${row.mode})` : ''}`;
    for (const name of systems) {
      const r = row[name];
      if (!r) {
        reasons.push(`${label} ${name}: not run`);
        continue;
      }
      if (r.notApplicable) continue;
      if (r.okTrials < r.trials)
        reasons.push(`${label} ${name}: ${r.trials - r.okTrials} of ${r.trials} trials failed`);
      if (r.blindSpans) reasons.push(`${label} ${name}: the split-brain watcher was blind (${r.blindSpans} spans)`);
    }
  }
  return { status: reasons.length ? 'failed' : 'ok', reasons };
}

const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));
const pair = (s) => (s?.n ? `${secs(s.median)} (${secs(s.max)})` : '-');
const mb = (bytes) => (bytes == null ? '-' : (bytes / 1e6).toFixed(0));
const mib = (bytes) => (bytes == null ? '-' : (bytes / 2 ** 20).toFixed(1));

/** One line per row and system, the row's figures; then Kanri's paired differences. */
export function formatTable(rows, systems) {
  const lines = [];
  for (const row of rows) {
    const label = `${row.row}${row.mode ? ` ${row.mode}` : ''} ${row.title}`;
    if (row.notMeasured) {
      lines.push(`${label}: not measured: ${row.notMeasured}`);
      continue;
    }
    lines.push(label);
    for (const name of systems) {
      const r = row[name];
      if (!r) continue;
      if (r.notApplicable) {
        lines.push(`  ${name.padEnd(15)} not applicable: ${r.notApplicable}`);
        continue;
      }
      const head = `  ${name.padEnd(15)} ${`${r.okTrials ?? '-'}/${r.trials ?? '-'}`.padEnd(6)}`;
      if (row.kind === 'fault')
        lines.push(
          `${head} gap s ${pair(r.clientGapMs).padEnd(14)} resumed s ${pair(r.clientMs).padEnd(14)} ` +
            `writable s ${pair(r.writableMs).padEnd(14)} endpoints s ${pair(r.endpointMs).padEnd(14)} failovers ${r.primaryChanges}/${r.okTrials}  ` +
            `lost ${r.commitsLost}/${r.commitsAcked}  split-brain ${r.splitBrainMoments ?? `${r.splitBrainSeen}, blind`}`,
        );
      else if (row.kind === 'rollout')
        lines.push(
          `${head} gap s ${pair(r.clientGapMs).padEnd(14)} primary changes ${r.primaryChanges.median ?? '-'} (max ${r.primaryChanges.max ?? '-'})  ` +
            `rollout s ${pair(r.rolloutMs)}  lost ${r.commitsLost}/${r.commitsAcked}`,
        );
      else if (row.kind === 'ready')
        lines.push(
          `${head} 1 cluster s ${pair(r.readyMs).padEnd(14)} ${r.many ? `${r.many.clusters} at once: median ${secs(r.many.medianReadyMs)} s, all ${secs(r.many.allReadyMs)} s` : ''}`,
        );
      else if (row.kind === 'backup')
        lines.push(
          `${head} ${mb(r.databaseBytes?.median)} MB: backup s ${pair(r.backupMs).padEnd(14)} ${r.backupMBps?.median ?? '-'} MB/s ` +
            `(its own record ${secs(r.systemBackupMs?.median)} s, ${mb(r.storedBytes?.median)} MB stored)  ` +
            `restore s ${pair(r.restoreMs).padEnd(14)} ${r.restoreMBps?.median ?? '-'} MB/s`,
        );
      else if (row.kind === 'memory')
        lines.push(
          `${head} RSS: operator idle ${mib(r.operatorIdleBytes)} MiB, with ${r.withClusters ?? '-'} clusters ${mib(r.operatorWithClustersBytes)} MiB; ` +
            `per-instance overhead ${mib(r.instanceOverheadBytes?.median)} MiB (max ${mib(r.instanceOverheadBytes?.max)})`,
        );
      for (const e of r.errors ?? []) lines.push(`${''.padEnd(24)}failed: ${String(e).split('\n')[0]}`);
    }
    for (const [label, paired] of [
      ['', row.paired],
      [' restore', row.pairedRestore],
    ])
      for (const [name, p] of Object.entries(paired ?? {}))
        if (p.pairs || p.firstFailed || p.secondFailed)
          lines.push(
            `  kanri − ${name}${label}: median ${secs(p.medianMs)} s over ${p.pairs} pairs; Kanri lower in ${p.firstLower}, higher in ${p.firstHigher} (sign test p=${p.signTestP})`,
          );
  }
  return lines.join('\n');
}
