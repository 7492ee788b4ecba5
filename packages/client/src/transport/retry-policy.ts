/**
 * When a failed request may be sent again. Pure.
 *
 * Only requests the server certainly did not act on, or that have no effect, are retried:
 * - 429 (API Priority and Fairness sheds the request before processing it): any verb, after Retry-After;
 * - a refused connection (nothing was sent): any verb;
 * - 5xx, a reset connection or a timeout: only reads (GET), since a write may have been applied.
 */
import { backoffDelay } from '@kanri/timing';

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

/** The retries' backoff: 100 ms doubling to 5 s, the last fifth random so retrying clients spread out. */
const RETRY_BACKOFF = { initialMs: 100, maxMs: 5_000, jitter: 0.2 } as const;

const NOTHING_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

export function decideRetry(input: RetryInput): RetryDecision {
  const no = { retry: false, delayMs: 0 };
  if (input.attempt >= input.maxAttempts) return no;
  // `attempt` counts from 1: the first retry waits about initialMs.
  const delayMs = backoffDelay(input.attempt - 1, { ...RETRY_BACKOFF, random: input.random });
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
