/**
 * When a failed request may be sent again. Pure.
 *
 * Only requests the server certainly did not act on, or that have no effect, are retried:
 * - 429 (API Priority and Fairness sheds the request before processing it): any verb, after Retry-After;
 * - a refused connection (nothing was sent): any verb;
 * - 5xx, a reset connection or a timeout: only reads (GET), since a write may have been applied.
 */

export interface RetryDecision {
  readonly retry: boolean;
  readonly delayMs: number;
}

export interface RetryInput {
  readonly method: string;
  readonly attempt: number;
  readonly statusCode?: number;
  readonly retryAfterSeconds?: number;
  /** A Node network error code such as ECONNREFUSED, when there was no response. */
  readonly errorCode?: string;
  readonly maxAttempts: number;
  readonly random?: () => number;
}

/** Exponential backoff from 100 ms, capped at 5 s, with ±20% jitter so retrying clients spread out. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(5_000, 100 * 2 ** (attempt - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

const NOTHING_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

export function decideRetry(input: RetryInput): RetryDecision {
  const no = { retry: false, delayMs: 0 };
  if (input.attempt >= input.maxAttempts) return no;
  const delayMs = backoffDelay(input.attempt, input.random);
  const isRead = input.method === 'GET' || input.method === 'HEAD';
  if (input.statusCode === 429) {
    return { retry: true, delayMs: input.retryAfterSeconds !== undefined ? input.retryAfterSeconds * 1000 : delayMs };
  }
  if (input.statusCode !== undefined) {
    return isRead && [500, 502, 503, 504].includes(input.statusCode) ? { retry: true, delayMs } : no;
  }
  if (input.errorCode && NOTHING_SENT.has(input.errorCode)) return { retry: true, delayMs };
  return isRead && input.errorCode !== undefined ? { retry: true, delayMs } : no;
}
