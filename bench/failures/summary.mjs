// Per row and system, the figures of the failure matrix from its trials, and the table: pure.
import { medianOf } from '../failover/trial.mjs';

const stats = (values) => {
  const xs = values.filter((v) => v != null);
  return { median: medianOf(xs), max: xs.length ? Math.max(...xs) : null, n: xs.length };
};

/** The figures of one row for one system (see bench/README.md, bench:failures). */
export function summarizeRow(results) {
  const ok = results.filter((r) => r.ok);
  return {
    trials: results.length,
    okTrials: ok.length,
    writableMs: stats(ok.map((r) => r.writableMs)),
    clientMs: stats(ok.map((r) => r.clientMs)),
    dbGapMs: stats(ok.map((r) => r.dbGapMs)),
    clientGapMs: stats(ok.map((r) => r.clientGapMs)),
    failovers: ok.filter((r) => r.failedOver).length,
    commitsAcked: ok.reduce((s, r) => s + r.acked, 0),
    commitsLost: ok.reduce((s, r) => s + r.lost, 0),
    trialsWithLoss: ok.filter((r) => r.lost > 0).length,
    splitBrainMoments: ok.reduce((s, r) => s + r.splitBrain.length, 0),
    errors: results.filter((r) => !r.ok).map((r) => r.error),
    /** Trials after which the cluster did not heal within 180 s (the system was started anew). */
    notHealed: results.filter((r) => r.healError).map((r) => r.healError),
  };
}

const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));
const pair = (s) => (s.n ? `${secs(s.median)} (${secs(s.max)})` : 'none');

/**
 * The readable table: per row and system the row's figure (time to a new primary, or the longest
 * write gap where no failover is expected), at the database and at the client, median (max).
 */
export function formatTable(rows, systems) {
  const lines = [
    'row  failure                                    system   trials  figure         database s med (max)  client s med (max)  failovers  acked    lost  split-brain',
  ];
  for (const row of rows) {
    if (row.notMeasured) {
      lines.push(`${String(row.row).padEnd(4)} ${row.title.slice(0, 42).padEnd(42)} not measured: ${row.notMeasured}`);
      continue;
    }
    for (const name of systems) {
      const r = row[name];
      if (!r) continue;
      const gap = !row.failover;
      lines.push(
        `${String(row.row).padEnd(4)} ${row.title.slice(0, 42).padEnd(42)} ${name.padEnd(8)} ${`${r.okTrials}/${r.trials}`.padEnd(7)} ` +
          `${(gap ? 'longest gap' : 'new primary').padEnd(14)} ${pair(gap ? r.dbGapMs : r.writableMs).padEnd(21)} ` +
          `${pair(gap ? r.clientGapMs : r.clientMs).padEnd(19)} ${`${r.failovers}/${r.okTrials}`.padEnd(10)} ` +
          `${String(r.commitsAcked).padEnd(8)} ${String(r.commitsLost).padEnd(5)} ${r.splitBrainMoments}`,
      );
      if (!gap && r.okTrials) {
        lines.push(`${''.padEnd(56)} (longest gap: database ${pair(r.dbGapMs)}, client ${pair(r.clientGapMs)})`);
      }
      for (const error of r.errors) lines.push(`${''.padEnd(56)} error: ${String(error).split('\n')[0]}`);
      for (const error of r.notHealed) lines.push(`${''.padEnd(56)} not healed: ${String(error).split('\n')[0]}`);
    }
  }
  return lines.join('\n');
}
