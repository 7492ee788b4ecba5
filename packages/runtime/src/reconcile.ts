/**
 * The whole reconcile contract: what a reconciler is asked (a Request), what it may answer
 * (nothing, or a requeue delay), and the one error that means "do not retry".
 */

/** Which object to reconcile. Reconcilers read the object itself from the cache, never from the event. */
export interface Request {
  readonly namespace?: string;
  readonly name: string;
}

/** A duration in milliseconds, or a string such as `'500ms'`, `'10s'`, `'5m'`, `'1h'`. */
export type Duration = number | string;

/**
 * What a reconcile returns. Nothing means "done until something changes" (and the periodic
 * resync); `requeueAfter` asks for another lap after that long, for example to poll progress.
 */
export type ReconcileResult = undefined | { readonly requeueAfter: Duration };

/**
 * Thrown from a reconcile when retrying cannot help (for example an invalid spec the user must
 * fix). It is logged and counted as an error, but the key is not requeued with backoff; the next
 * change to the object triggers a new lap.
 */
export class TerminalError extends Error {
  override name = 'TerminalError';
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `'10s'` → 10000. Pure; throws on a malformed duration naming it. */
export function parseDuration(duration: Duration): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0)
      throw new RangeError(`invalid duration ${duration}: must be ≥ 0 ms`);
    return duration;
  }
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(duration.trim());
  if (!match)
    throw new RangeError(`invalid duration "${duration}": use a number of ms or e.g. "500ms", "10s", "5m", "1h"`);
  return Number(match[1]) * (UNITS[match[2] ?? 'ms'] ?? 1);
}

/** `namespace/name`, or `name` for cluster-scoped objects: the work-queue key. */
export function requestKey(request: Request): string {
  return request.namespace ? `${request.namespace}/${request.name}` : request.name;
}

export function requestFromKey(key: string): Request {
  const slash = key.indexOf('/');
  return slash === -1 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
