// The figures of `npm run bench:converge` (scripts/bench-converge.mjs): each contender's median
// and range over its runs, the table and the ratios of medians.
import { median, mib, ratio, round1 } from '../../scripts/bench-lib.mjs';

const round3 = (x) => (x == null ? null : Math.round(x * 1000) / 1000);
const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));

/** Sums up one contender's runs: medians and ranges over the runs that succeeded; any failed run fails it. */
export function summarize(runs, { skipped }) {
  const ok = runs.filter((r) => r.ok);
  const pick = (key) => ok.map((r) => r[key]);
  const med = (key) => (ok.length ? median(pick(key)) : null);
  const min = (key) => (ok.length ? Math.min(...pick(key)) : null);
  const max = (key) => (ok.length ? Math.max(...pick(key)) : null);
  return {
    status: skipped ? 'skipped' : ok.length === runs.length && ok.length > 0 ? 'ok' : 'failed',
    convergeMs: round1(med('convergeMs')),
    convergeMsMin: min('convergeMs'),
    convergeMsMax: max('convergeMs'),
    cpuSeconds: round3(med('cpuSeconds')),
    cpuSecondsMin: min('cpuSeconds'),
    cpuSecondsMax: max('cpuSeconds'),
    maxRssBytes: med('maxRssBytes'),
    maxRssBytesMin: min('maxRssBytes'),
    maxRssBytesMax: max('maxRssBytes'),
    writes: ok.length && ok.every((r) => r.writes != null) ? med('writes') : null,
    okRuns: ok.length,
    error: runs.find((r) => !r.ok)?.error ?? (skipped || runs.length ? null : 'never ran'),
    runs,
  };
}

/** Prints the table (median and min–max of each figure) and the ratios of medians; returns the ratios. */
export function printReport({ contenders, summary, items, workers, rounds }) {
  const range = (lo, hi, f) => (lo == null ? '-' : `${f(lo)}–${f(hi)}`);
  const cpu = (x) => x.toFixed(2);
  const rows = [
    ['contender', 'status', 'converge s', 'min–max', 'CPU s', 'min–max', 'peak RSS MiB', 'min–max', 'writes'],
  ];
  for (const c of contenders) {
    const s = summary[c.name];
    rows.push([
      c.name,
      s.status === 'failed' ? `FAILED (${s.okRuns}/${s.runs.length} ok)` : s.status,
      secs(s.convergeMs),
      range(s.convergeMsMin, s.convergeMsMax, secs),
      s.cpuSeconds == null ? '-' : cpu(s.cpuSeconds),
      range(s.cpuSecondsMin, s.cpuSecondsMax, cpu),
      mib(s.maxRssBytes),
      range(s.maxRssBytesMin, s.maxRssBytesMax, mib),
      s.writes == null ? '-' : String(s.writes),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log(
    `\nConvergence of ${items} Items (one owned ConfigMap + status each), ${workers} workers, ` +
      `${rounds} round${rounds > 1 ? 's' : ''}, every contender once per round (medians and min–max):\n`,
  );
  for (const row of rows)
    console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  for (const c of contenders) if (summary[c.name].error) console.log(`  ${c.name}: ${summary[c.name].error}`);

  const k = summary.kanri;
  const cr = summary['controller-runtime'];
  const kopf = summary.kopf;
  const raw = summary.raw;
  const ratios = {
    kanriToControllerRuntimeTime: ratio(k.convergeMs, cr.convergeMs),
    kanriToControllerRuntimeRss: ratio(k.maxRssBytes, cr.maxRssBytes),
    kanriToControllerRuntimeCpu: ratio(k.cpuSeconds, cr.cpuSeconds),
    kanriToRawTime: ratio(k.convergeMs, raw.convergeMs),
    controllerRuntimeToRawTime: ratio(cr.convergeMs, raw.convergeMs),
    kopfToControllerRuntimeTime: ratio(kopf.convergeMs, cr.convergeMs),
    kopfToControllerRuntimeRss: ratio(kopf.maxRssBytes, cr.maxRssBytes),
    kopfToControllerRuntimeCpu: ratio(kopf.cpuSeconds, cr.cpuSeconds),
    kopfToRawTime: ratio(kopf.convergeMs, raw.convergeMs),
  };
  // A ratio is missing only where a contender was skipped on purpose (BENCH_CONTENDERS) or failed the run.
  const x = (v) => (v == null ? '-' : `${v.toFixed(2)}x`);
  console.log('\nRatios of medians (lower is better for the first named):');
  console.log(
    `  kanri / controller-runtime  time ${x(ratios.kanriToControllerRuntimeTime)}   ` +
      `peak RSS ${x(ratios.kanriToControllerRuntimeRss)}   CPU ${x(ratios.kanriToControllerRuntimeCpu)}`,
  );
  console.log(`  kanri / raw                 time ${x(ratios.kanriToRawTime)}`);
  console.log(`  controller-runtime / raw    time ${x(ratios.controllerRuntimeToRawTime)}`);
  console.log(
    `  kopf / controller-runtime   time ${x(ratios.kopfToControllerRuntimeTime)}   ` +
      `peak RSS ${x(ratios.kopfToControllerRuntimeRss)}   CPU ${x(ratios.kopfToControllerRuntimeCpu)}`,
  );
  console.log(`  kopf / raw                  time ${x(ratios.kopfToRawTime)}`);
  return ratios;
}
