// What the split-brain watcher's records say, pure: the moments two instances took writes at once,
// and the spans in which it could not have seen one. A watcher that did not probe an instance for
// a while saw nothing there, so "no split brain" holds only where it was not blind; the tests'
// watcher (packages/postgres/test/support/failover-env.ts) makes the same check.

/** A loop that begins no probe for longer than this was blind (see {@link blindSpans}). */
export const BLIND_MS = 10_000;

/**
 * Distinct moments at which two instances accepted writes: two acceptances on different instances
 * whose spans overlap, or that alternate A, B, A within a second, which no legitimate failover
 * does. One moment per second and pair, however many probes fell in it.
 *
 * @param accepted [{ instance, start, end }] (performance.now())
 * @example
 * violations([{ instance: 'a', start: 0, end: 10 }, { instance: 'b', start: 5, end: 12 }]);
 * // [{ at: 5, instances: ['a', 'b'], kind: 'overlapping writes' }]
 */
export function violations(accepted) {
  const found = [];
  const seen = new Set();
  const sorted = [...accepted].sort((a, b) => a.start - b.start);
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i];
    for (let j = i + 1; j < sorted.length; j++) {
      const b = sorted[j];
      if (b.start > a.end + 1_000) break;
      if (b.instance === a.instance) continue;
      const overlap = b.start <= a.end;
      let back = false;
      for (let k = j + 1; !overlap && !back && k < sorted.length && sorted[k].start <= a.end + 1_000; k++) {
        back = sorted[k].instance === a.instance;
      }
      if (!overlap && !back) continue;
      const key = `${[a.instance, b.instance].sort().join('+')}@${Math.floor(b.start / 1_000)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      found.push({
        at: Math.round(b.start),
        instances: [a.instance, b.instance],
        kind: overlap ? 'overlapping writes' : 'alternating writes within 1 s',
      });
    }
  }
  return found;
}

/**
 * Spans of `[from, to]` longer than `ms` in which an instance's loop began no probe. A healthy
 * loop begins one every few seconds whatever the instance's state (its connection and query
 * timeouts bound each attempt), so a longer span means the watcher was blind to that instance
 * there. An instance the watcher learnt of only during the window is judged from then.
 *
 * @param attempts Map instance → { since, times: [performance.now() of each probe or connection attempt] }
 * @example
 * blindSpans(new Map([['m1', { since: 0, times: [0, 1_000, 15_000] }]]), { from: 0, to: 16_000 });
 * // [{ instance: 'm1', fromMs: 1000, ms: 14000 }]
 */
export function blindSpans(attempts, { from, to, ms = BLIND_MS }) {
  const found = [];
  for (const [instance, { since, times }] of attempts) {
    const start = Math.max(from, since);
    if (start >= to) continue;
    const inside = times.filter((t) => t > start && t < to);
    const before = times.filter((t) => t <= start).at(-1);
    // From the window's start (or the last probe before it, if the loop was already silent) to
    // each probe, and from the last one to the window's end.
    const edges = [before ?? start, ...inside, to];
    for (let k = 1; k < edges.length; k++) {
      const gap = edges[k] - edges[k - 1];
      if (gap > ms) found.push({ instance, fromMs: Math.round(edges[k - 1]), ms: Math.round(gap) });
    }
  }
  return found;
}

/** One line per blind span, for a table or a log. */
export const describeBlindSpans = (spans) =>
  spans.map((s) => `${s.instance}: no probe for ${(s.ms / 1000).toFixed(1)} s`);
