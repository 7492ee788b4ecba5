// bench:failover's figures from its trials, pure: each system's summary (successful trials only),
// and the comparison of two systems trial by trial, in which a failed trial counts against the
// system that failed rather than leaving the comparison.
import { FAILED, pairedDifferences, ratio, round1 } from '../../scripts/bench-stats.mjs';

/** The median of the figures present, to 0.1; null when there is none. */
export function medianOf(values) {
  const xs = values.filter((v) => v != null).sort((a, b) => a - b);
  if (!xs.length) return null;
  const mid = Math.floor(xs.length / 2);
  return round1(xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2);
}

/**
 * One system's figures. Every figure, commits lost included, comes from its successful trials
 * only: a failed trial may have stopped half-way, and its partial figures say nothing.
 * `failedTrials` counts the others.
 *
 * @example
 * summarizeTrials([{ ok: true, rtoMs: 14_000, writableMs: 13_900, clientSearchMs: 100, acked: 10, lost: 0 }]);
 */
export function summarizeTrials(results) {
  const ok = results.filter((r) => r.ok);
  const range = (key) => {
    const xs = ok.map((r) => r[key]).filter((v) => v != null);
    return { median: medianOf(xs), min: xs.length ? Math.min(...xs) : null, max: xs.length ? Math.max(...xs) : null };
  };
  const rto = range('rtoMs');
  const writable = range('writableMs');
  const search = range('clientSearchMs');
  const toClient = ok.map((r) => (r.takeoverMs == null ? null : round1(r.rtoMs - r.takeoverMs)));
  return {
    trials: results.length,
    okTrials: ok.length,
    failedTrials: results.length - ok.length,
    rtoMsMedian: rto.median,
    rtoMsMin: rto.min,
    rtoMsMax: rto.max,
    rtoMs: ok.map((r) => r.rtoMs),
    writableMsMedian: writable.median,
    writableMsMin: writable.min,
    writableMsMax: writable.max,
    writableMs: ok.map((r) => r.writableMs),
    clientSearchMsMedian: search.median,
    clientSearchMsMin: search.min,
    clientSearchMsMax: search.max,
    commitsAcked: ok.reduce((s, r) => s + r.acked, 0),
    commitsLost: ok.reduce((s, r) => s + r.lost, 0),
    trialsWithLoss: ok.filter((r) => r.lost > 0).length,
    takeoverMsMedian: medianOf(ok.map((r) => r.takeoverMs)),
    takeoverToWritableMsMedian: medianOf(
      ok.map((r) => (r.takeoverMs == null ? null : round1(r.writableMs - r.takeoverMs))),
    ),
    // The row-3 floor at the client (issue 14: the first write within 150 ms of the Lease).
    takeoverToClientMsMedian: medianOf(toClient),
    takeoverToClientMs: toClient,
  };
}

/**
 * Trial by trial, `key` of system `a` and of system `b`: the figure of a successful trial,
 * {@link FAILED} for one that ran and failed, undefined for one that did not run.
 */
export function pairsByTrial(aResults, bResults, trials, key) {
  const of = (results, trial) => {
    const r = results.find((x) => x.trial === trial);
    if (!r) return undefined;
    return r.ok ? r[key] : FAILED;
  };
  return Array.from({ length: trials }, (_, i) => [of(aResults, i + 1), of(bResults, i + 1)]);
}

/** The figures compared between the systems, each paired by trial. */
export const COMPARED = ['writableMs', 'rtoMs', 'clientSearchMs'];

/**
 * Kanri against Patroni: per figure the paired differences (kanri − patroni) with their sign test,
 * a failed trial counting against its system; and the ratios of the medians, which come from
 * successful trials only and are given whether or not the run as a whole failed. `why` says, for a
 * ratio that cannot be given, which system has no successful trial.
 *
 * @example
 * const { paired, ratios } = compareSystems(report, 10);
 */
export function compareSystems(report, trials) {
  const kanri = report.kanri;
  const patroni = report.patroni;
  if (!kanri || !patroni) return { paired: null, ratios: null, why: 'only one system ran' };
  const paired = Object.fromEntries(
    COMPARED.map((key) => [key, pairedDifferences(pairsByTrial(kanri.results, patroni.results, trials, key))]),
  );
  const none = ['kanri', 'patroni'].filter((name) => !report[name].okTrials);
  return {
    paired,
    ratios: {
      writableKanriOverPatroni: ratio(kanri.writableMsMedian, patroni.writableMsMedian),
      rtoKanriOverPatroni: ratio(kanri.rtoMsMedian, patroni.rtoMsMedian),
    },
    why: none.length ? `no successful trial of ${none.join(' or ')}` : null,
  };
}

/** The run is ok when every system ran every trial and each succeeded. */
export const systemStatus = (summary, trials) => (summary.okTrials === trials ? 'ok' : 'failed');
