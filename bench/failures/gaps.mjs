// The longest write gap around a fault, for rows where no failover is expected: pure.

/**
 * The longest time without an acknowledged write between `from` and `to`, given acknowledgement
 * times in increasing order. The gap the fault opens starts at the last acknowledgement before
 * `from` (or at `from` if there is none) and a gap still open at `to` ends there.
 *
 * @example
 * longestGap([0, 10, 500, 510], 5, 600) // 490: from 10 to 500
 */
export function longestGap(times, from, to) {
  let previous = from;
  for (const t of times) {
    if (t > from) break;
    previous = t;
  }
  let longest = 0;
  for (const t of times) {
    if (t <= from) continue;
    if (t > to) break;
    longest = Math.max(longest, t - previous);
    previous = t;
  }
  return Math.max(longest, to - previous);
}
