/** The agent's two waiting loops: retry an action with the shared Backoff, and wait for postgres to answer. */
import { Backoff, sleepUnlessAborted } from '@kanri/timing';
import type { Logger } from './log/logger.js';
import type { LocalDb } from './postgres/local-db.js';

/**
 * Retries `action` with backoff (0.5 s doubling to 30 s) until it succeeds or `signal` aborts (then undefined).
 *
 * @example
 * ```ts
 * const changed = await retry(log, 'write the configuration files', signal, () => files.write());
 * ```
 */
export async function retry<T>(
  log: Logger,
  what: string,
  signal: AbortSignal,
  action: () => Promise<T>,
): Promise<T | undefined> {
  const backoff = new Backoff({ initialMs: 1_000, maxMs: 30_000, jitter: 0 });
  while (!signal.aborted) {
    try {
      return await action();
    } catch (error) {
      if (signal.aborted) return undefined;
      const retryInMs = backoff.next();
      log.warn({ err: error, attempt: backoff.attempt, retryInMs }, `cannot ${what}; retrying`);
      await sleepUnlessAborted(retryInMs, signal);
    }
  }
  return undefined;
}

/** Polls every 100 ms until postgres answers, or `signal` aborts; `onWait` runs at each poll that found it not answering. */
export async function untilAccepting(db: LocalDb, signal: AbortSignal, onWait?: () => void): Promise<void> {
  while (!signal.aborted && !(await db.ping())) {
    onWait?.();
    await sleepUnlessAborted(100, signal);
  }
}
