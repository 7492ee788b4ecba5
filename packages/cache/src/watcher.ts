/**
 * The watcher: list, then watch from the list's resourceVersion, forever, as one state machine.
 *
 * Guarantees:
 * - it never ends on an error: failures are reported through `onError` and retried with backoff;
 * - a watch resumes from the last resourceVersion seen (event or bookmark), so a reconnect
 *   loses nothing; only `410 Gone` forces a relist, delivered as one `relisted` event holding
 *   the complete list, which the consumer swaps in atomically;
 * - a stream that goes silent (not even a bookmark) for `idleTimeoutMs` is dropped and reopened,
 *   so a stalled connection cannot freeze the cache;
 * - each watch asks the server to end it after a jittered 5–10 minutes, as client-go does.
 * Caveats: resource versions are compared only for equality, never ordered (they are opaque).
 */
import { GoneError, type KubeObject, type ListOptions, type ResourceClient } from '@kanri/client';
import { Backoff, sleepUnlessAborted } from '@kanri/timing';

export type WatcherEvent<T extends KubeObject> =
  | {
      readonly type: 'relisted';
      readonly objects: T[];
      readonly resourceVersion: string;
      readonly listStartedAt: number;
      /** True for a quorum read; false for the first list, served from the API server's watch cache. */
      readonly consistent: boolean;
    }
  | { readonly type: 'applied'; readonly object: T }
  | { readonly type: 'deleted'; readonly object: T }
  | { readonly type: 'bookmark'; readonly resourceVersion: string };

export interface WatcherOptions<T extends KubeObject = KubeObject> {
  readonly namespace?: string;
  readonly labelSelector?: ListOptions['labelSelector'];
  readonly fieldSelector?: string;
  readonly metadataOnly?: boolean;
  /** List page size. Default 500. */
  readonly pageSize?: number;
  /** Reconnect when nothing arrives for this long. Default 90 s (the API server sends bookmarks about every minute). */
  readonly idleTimeoutMs?: number;
  /** Server-side watch timeout range in seconds. Default [300, 600]. */
  readonly watchTimeoutSeconds?: readonly [number, number];
  readonly backoff?: Backoff;
  readonly signal?: AbortSignal;
  /** Told about every failure; the watcher retries after `retryInMs`. */
  readonly onError?: (error: unknown, retryInMs: number) => void;
  /** Told when a silent stream is dropped to reconnect. */
  readonly onIdleReconnect?: () => void;
  /** Applied to each object as it arrives, so what it drops (managedFields) never piles up during a long list. */
  readonly transform?: (object: T) => T;
}

/**
 * `list` with `fromCache` asks for resourceVersion "0": the API server answers from its watch
 * cache without touching etcd, as client-go's reflector does for its first list. After a 410 the
 * relist is a quorum read, since the cache may be behind what we already saw.
 */
type State =
  | { readonly phase: 'list'; readonly fromCache: boolean }
  | { readonly phase: 'watch'; readonly resourceVersion: string };

class IdleTimeout extends Error {}

function jitter([min, max]: readonly [number, number]): number {
  return Math.floor(min + Math.random() * (max - min));
}

/** Runs until `options.signal` aborts. */
export async function* watcher<T extends KubeObject>(
  resource: ResourceClient<T>,
  options: WatcherOptions<T> = {},
): AsyncGenerator<WatcherEvent<T>> {
  const transform = options.transform ?? ((object: T) => object);
  const backoff = options.backoff ?? new Backoff();
  const scope = {
    namespace: options.namespace,
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    metadataOnly: options.metadataOnly,
  };
  let state: State = { phase: 'list', fromCache: true };
  while (!options.signal?.aborted) {
    try {
      if (state.phase === 'list') {
        const listStartedAt = performance.now();
        const objects: T[] = [];
        let resourceVersion = '';
        const pages = resource.listPages({
          ...scope,
          limit: options.pageSize ?? 500,
          resourceVersion: state.fromCache ? '0' : undefined,
          signal: options.signal,
        });
        for await (const page of pages) {
          for (const item of page.items) objects.push(transform(item));
          resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
        }
        backoff.reset();
        yield { type: 'relisted', objects, resourceVersion, listStartedAt, consistent: !state.fromCache };
        state = { phase: 'watch', resourceVersion };
        continue;
      }
      let resourceVersion: string = state.resourceVersion;
      const stream = new AbortController();
      const abortStream = () => stream.abort(options.signal?.reason);
      options.signal?.addEventListener('abort', abortStream, { once: true });
      const idleMs = options.idleTimeoutMs ?? 90_000;
      let idle: NodeJS.Timeout | undefined;
      const armIdle = () => {
        clearTimeout(idle);
        idle = setTimeout(() => stream.abort(new IdleTimeout()), idleMs);
      };
      armIdle();
      try {
        for await (const event of resource.watch({
          ...scope,
          resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: jitter(options.watchTimeoutSeconds ?? [300, 600]),
          signal: stream.signal,
        })) {
          armIdle();
          resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
          state = { phase: 'watch', resourceVersion };
          if (event.type === 'BOOKMARK') yield { type: 'bookmark', resourceVersion };
          else if (event.type === 'DELETED') yield { type: 'deleted', object: transform(event.object) };
          else yield { type: 'applied', object: transform(event.object) };
        }
        // The server closed the stream (its timeout): reopen from where we are, no backoff needed.
        backoff.reset();
      } catch (error) {
        if (stream.signal.reason instanceof IdleTimeout && !options.signal?.aborted) {
          options.onIdleReconnect?.();
          continue;
        }
        throw error;
      } finally {
        clearTimeout(idle);
        options.signal?.removeEventListener('abort', abortStream);
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      if (error instanceof GoneError) {
        // Our resourceVersion was compacted away: only a fresh, consistent list can tell what we missed.
        state = { phase: 'list', fromCache: false };
        options.onError?.(error, 0);
        continue;
      }
      const delay = backoff.next();
      options.onError?.(error, delay);
      await sleepUnlessAborted(delay, options.signal);
    }
  }
}
