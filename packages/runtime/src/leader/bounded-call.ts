/**
 * A call bounded in time: its signal aborts after the budget (or with the caller's signal), and the
 * call is raced against that signal too, so a leader steps down on time even if a request ignores
 * its signal.
 */
import { createDeadline } from '../deadline.js';

/**
 * Resolves with `call`'s result, or with `fallback` once `budgetMs` has passed or `signal` aborted;
 * `onTimedOut` hears of a budget that ran out (not of an abort by `signal`, which is a shutdown).
 */
export async function withinBudget<T>(
  budgetMs: number,
  signal: AbortSignal,
  call: (bounded: AbortSignal) => Promise<T>,
  fallback: T,
  onTimedOut: (budgetMs: number) => void,
): Promise<T> {
  const budget = Math.max(1, Math.ceil(budgetMs));
  const deadline = createDeadline(budget, signal);
  const bounded = deadline.signal;
  if (bounded.aborted) {
    deadline.dispose();
    return fallback;
  }
  let finished = false;
  const timedOut = new Promise<T>((resolve) =>
    bounded.addEventListener(
      'abort',
      () => {
        if (!finished && !signal.aborted) onTimedOut(budget);
        resolve(fallback);
      },
      { once: true },
    ),
  );
  try {
    return await Promise.race([call(bounded), timedOut]);
  } finally {
    deadline.dispose();
    finished = true;
  }
}

/** Runs a user callback; a throw is reported, never passed on. The promise settles with its work and never rejects. */
export function callSafely(callback: () => unknown, report: (error: unknown) => void): Promise<void> {
  try {
    return Promise.resolve(callback()).then(() => undefined, report);
  } catch (error) {
    report(error);
    return Promise.resolve();
  }
}
