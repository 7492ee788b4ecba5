/** Polling for tests: wait until a probe says yes, or fail naming what was awaited and what was last seen. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` every `intervalMs` until it returns a truthy value (which is returned); a thrown
 * error counts as "not yet". Times out with a message naming `what` and the last value or error.
 *
 * @example
 * ```ts
 * const pod = await waitFor('db-0 to be Running', async () => {
 *   const p = await pods.get('db-0', { namespace: 'default' });
 *   return p.status?.phase === 'Running' && p;
 * });
 * ```
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      last = await probe();
      if (last) return last as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    await sleep(intervalMs);
  }
  const shown = last instanceof Error ? last.message : JSON.stringify(last);
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${String(shown).slice(0, 500)}`);
}

/**
 * Resolves as `promise` does, or rejects after `timeoutMs` naming `what`, so a test that awaits
 * an event (a child printing a line, a watch delivering) fails with a message instead of hanging.
 * The timer is cleared as soon as `promise` settles.
 *
 * @example
 * ```ts
 * const takeover = await within('the standby to lead', standby.leading, 10_000);
 * ```
 */
export function within<T>(what: string, promise: Promise<T>, timeoutMs = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timedOut]).finally(() => clearTimeout(timer));
}
