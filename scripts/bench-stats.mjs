// The benchmarks' statistics, pure (no I/O, no imports): the median, ratios of medians, rounding,
// and the exact sign test over paired trials. bench-lib.mjs re-exports them for the drivers.

/** A trial that ran and failed: in a pair it counts against its system (see {@link pairedDifferences}). */
export const FAILED = 'failed';

/**
 * The median of the numbers in `xs`; null, undefined and NaN are left out; null when none is left.
 *
 * @example
 * median([3, 1, 2, null]); // 2
 */
export const median = (xs) => {
  const s = xs.filter((x) => x != null && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** `a / b` to three decimals; null when either is missing or `b` is 0. */
export const ratio = (a, b) => (a == null || b == null || b === 0 ? null : Math.round((a / b) * 1000) / 1000);

export const round1 = (x) => (x == null ? null : Math.round(x * 10) / 10);

/** Two-sided exact sign test: the probability of a split at least this uneven if either sign were as likely. Ties are dropped. */
export function signTest(diffs) {
  const signs = diffs.filter((d) => d != null && d !== 0);
  const n = signs.length;
  if (n === 0) return 1;
  const k = Math.min(signs.filter((d) => d > 0).length, signs.filter((d) => d < 0).length);
  // P(X <= k) for X ~ Binomial(n, 1/2), summed term by term (C(n, i+1) = C(n, i) (n - i) / (i + 1)).
  let term = 0.5 ** n;
  let tail = 0;
  for (let i = 0; i <= k; i++) {
    tail += term;
    term = (term * (n - i)) / (i + 1);
  }
  return Math.min(1, 2 * tail);
}

/**
 * Paired differences `a - b`, trial by trial. Each side is a figure (the trial succeeded),
 * {@link FAILED} (it ran and failed) or null/undefined (it did not run). The median and range of
 * the differences come from pairs where both succeeded; the signs and the sign test also count a
 * pair where exactly one side failed, against the side that failed (it never got the figure, so it
 * was slower than the other); a pair where both failed, or one side did not run, counts for neither.
 *
 * @example
 * pairedDifferences([[10, 12], [FAILED, 11], [9, 9]]);
 * // { pairs: 2, medianMs: -1, firstLower: 1, firstHigher: 1, firstFailed: 1, ties: 1, … }
 */
export function pairedDifferences(pairs) {
  const ok = (x) => typeof x === 'number' && Number.isFinite(x);
  const diffs = pairs.filter(([a, b]) => ok(a) && ok(b)).map(([a, b]) => round1(a - b));
  const firstFailed = pairs.filter(([a, b]) => a === FAILED && ok(b)).length;
  const secondFailed = pairs.filter(([a, b]) => ok(a) && b === FAILED).length;
  const signs = [...diffs, ...Array(firstFailed).fill(1), ...Array(secondFailed).fill(-1)];
  return {
    pairs: diffs.length,
    medianMs: diffs.length ? round1(median(diffs)) : null,
    minMs: diffs.length ? Math.min(...diffs) : null,
    maxMs: diffs.length ? Math.max(...diffs) : null,
    firstLower: diffs.filter((d) => d < 0).length + secondFailed,
    firstHigher: diffs.filter((d) => d > 0).length + firstFailed,
    ties: diffs.filter((d) => d === 0).length,
    firstFailed,
    secondFailed,
    bothFailed: pairs.filter(([a, b]) => a === FAILED && b === FAILED).length,
    signTestP: signs.length ? Math.round(signTest(signs) * 10_000) / 10_000 : null,
    diffsMs: diffs,
  };
}
