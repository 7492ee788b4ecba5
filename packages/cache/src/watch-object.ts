/**
 * Follows one named object: the cache's watcher (list, then watch, with its backoff, 410 relist
 * and stall detection) narrowed by a `metadata.name=` field selector, reduced to "what the object
 * is now", in kube-rs's `watch_object` spirit.
 *
 * Guarantees:
 * - `onChange` is called once the first list is in (with `undefined` when the object does not
 *   exist), then for every change: the new object, or `undefined` once it is deleted;
 * - calls never overlap (an async `onChange` is awaited) and never repeat a state: two calls in a
 *   row never carry the same resourceVersion, nor `undefined` twice;
 * - it never ends on an error: API failures are logged and retried with backoff, and a throwing
 *   `onChange` is logged and does not stop the watch.
 * Caveats: while an `onChange` runs, later events wait in the stream; a handler that takes longer
 * than `idleTimeoutMs` makes the watch reconnect (it resumes where it was, nothing is lost).
 */
import type { KubeObject, ResourceClient } from '@kanri/client';
import type { BackoffOptions } from '@kanri/timing';
import { Backoff } from '@kanri/timing';
import { stripManagedFields } from './transforms.js';
import { watcher } from './watcher.js';

/** Where failures go; a pino logger fits. */
export interface WatchObjectLog {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface WatchObjectOptions<T extends KubeObject> {
  readonly resource: ResourceClient<T>;
  /** Absent for a cluster-scoped object. */
  readonly namespace?: string;
  readonly name: string;
  /** Told each new state of the object; `undefined` while it does not exist. */
  readonly onChange?: (object: T | undefined) => void | Promise<void>;
  /** Stops the watch. */
  readonly signal: AbortSignal;
  /** Told about API failures (warn) and failing `onChange` calls (error). Default: silent. */
  readonly log?: WatchObjectLog;
  /** Reconnect when nothing arrives for this long. Default 90 s. */
  readonly idleTimeoutMs?: number;
  /** Server-side watch timeout range in seconds. Default [300, 600]. */
  readonly watchTimeoutSeconds?: readonly [number, number];
  /** Retry delays after API failures. Default `Backoff`'s (250 ms doubling to 30 s, half jitter). */
  readonly backoff?: BackoffOptions;
}

export interface ObjectWatch<T extends KubeObject> {
  /** The latest state seen: the object, or `undefined` when it does not exist or is not listed yet. */
  current(): T | undefined;
  /** True once the first list is in and its `onChange` call has returned. */
  readonly synced: boolean;
  /**
   * Resolves with the first state once the first list is in and its `onChange` call has returned;
   * rejects with the abort reason when the watch stops before that.
   */
  waitForSync(): Promise<T | undefined>;
  /** Resolves once the watch has stopped (after `signal` aborts). Never rejects. */
  readonly done: Promise<void>;
}

/** A state that no real object has, so the first list is always delivered. */
const NOTHING_YET = Symbol('nothing yet');

/**
 * Starts following `namespace/name` in the background until `signal` aborts.
 *
 * @example
 * ```ts
 * import { watchObject } from '@kanri/cache';
 *
 * const config = watchObject({
 *   resource: client.resource('v1', 'ConfigMap'),
 *   namespace: 'db',
 *   name: 'pg-config',
 *   onChange: (configMap) => applySettings(configMap?.data),
 *   signal,
 *   log,
 * });
 * await config.waitForSync(); // the first state (present or not) has been applied
 * console.log(config.current()?.data);
 * await config.done; // after signal aborts
 * ```
 */
export function watchObject<T extends KubeObject>(options: WatchObjectOptions<T>): ObjectWatch<T> {
  const { resource, namespace, name, signal, log } = options;
  let current: T | undefined;
  let delivered: string | undefined | typeof NOTHING_YET = NOTHING_YET;
  let synced = false;
  const syncWaiters = new Set<{ resolve: (object: T | undefined) => void; reject: (reason: unknown) => void }>();

  const deliver = async (object: T | undefined) => {
    current = object;
    const version = object?.metadata?.resourceVersion;
    if (version === delivered) return;
    delivered = version;
    try {
      await options.onChange?.(object);
    } catch (error) {
      log?.error({ err: error, object: name }, 'handling a change failed');
    }
  };

  const run = async () => {
    const events = watcher(resource, {
      namespace,
      fieldSelector: `metadata.name=${name}`,
      idleTimeoutMs: options.idleTimeoutMs,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      backoff: new Backoff(options.backoff),
      transform: stripManagedFields,
      signal,
      onError: (error, retryInMs) =>
        log?.warn({ err: error, object: name, retryInMs }, 'cannot follow the object; retrying'),
    });
    for await (const event of events) {
      if (event.type === 'bookmark') continue;
      if (event.type === 'relisted') {
        await deliver(event.objects.find((o) => o.metadata?.name === name));
        if (!synced) {
          synced = true;
          for (const waiter of syncWaiters) waiter.resolve(current);
          syncWaiters.clear();
        }
      } else await deliver(event.type === 'deleted' ? undefined : event.object);
    }
  };

  const done = run()
    .catch((error: unknown) => log?.error({ err: error, object: name }, 'the watch stopped on an error'))
    .finally(() => {
      for (const waiter of syncWaiters) waiter.reject(signal.reason);
      syncWaiters.clear();
    });

  return {
    current: () => current,
    get synced() {
      return synced;
    },
    waitForSync: () => {
      if (synced) return Promise.resolve(current);
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise((resolve, reject) => syncWaiters.add({ resolve, reject }));
    },
    done,
  };
}
