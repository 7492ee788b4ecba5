/**
 * A signal that aborts after `ms`, or as soon as any parent signal aborts.
 *
 * `AbortSignal.any([parent, AbortSignal.timeout(ms)])` is not used on purpose: on Node 20 the
 * timeout signal inside such a composite can be garbage-collected before it fires
 * (nodejs/node#57736), and then a leader never notices that its renewal hung, keeps serving
 * writes past its Lease, and two primaries accept writes. Here a timer holds the controller
 * until `dispose()`, which callers run in `finally`.
 *
 * @example
 * ```ts
 * const deadline = createDeadline(5_000, signal);
 * try {
 *   await client.resource('v1', 'ConfigMap').get('x', { namespace: 'default', signal: deadline.signal });
 * } finally {
 *   deadline.dispose();
 * }
 * ```
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Clears the timer and detaches from the parents. */
  dispose(): void;
}

export function createDeadline(ms: number, ...parents: readonly (AbortSignal | undefined)[]): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError')),
    Math.max(0, ms),
  );
  const detach: (() => void)[] = [];
  for (const parent of parents) {
    if (!parent) continue;
    if (parent.aborted) {
      controller.abort(parent.reason);
      break;
    }
    const onAbort = () => controller.abort(parent.reason);
    parent.addEventListener('abort', onAbort, { once: true });
    detach.push(() => parent.removeEventListener('abort', onAbort));
  }
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      for (const d of detach) d();
    },
  };
}
