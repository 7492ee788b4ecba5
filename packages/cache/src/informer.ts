/**
 * The informer: a watcher feeding a store, with handlers, sync state and read-your-own-writes.
 *
 * Guarantees: `start()` never throws and the informer never stops on an error (it reports and
 * retries); after `waitForSync()` the store holds a complete list; handlers see every change as
 * an added/updated/deleted delta, including the exact differences after a relist; reads reflect
 * this process's own writes (see OwnWrites).
 * Caveats: handlers run synchronously inside the event loop turn that applied the change and
 * must not block; objects are shared with the store and must not be mutated.
 */
import {
  type KubeClient,
  type KubeObject,
  type ListOptions,
  parseApiVersion,
  type ResourceClient,
  type WriteEvent,
} from '@kanri/client';
import { Backoff } from '@kanri/timing';
import { keyOf, objectKey } from './object-key.js';
import { OwnWrites } from './own-writes.js';
import { type Delta, type IndexFunction, type ReadonlyDeep, type ReadonlyStore, Store } from './store.js';
import { stripManagedFields, type Transform } from './transforms.js';
import { watcher } from './watcher.js';

export interface InformerOptions<T extends KubeObject> {
  /** Only this namespace; all namespaces if absent. */
  readonly namespace?: string;
  readonly labelSelector?: ListOptions['labelSelector'];
  readonly fieldSelector?: string;
  /** Cache PartialObjectMetadata only (no spec or status). */
  readonly metadataOnly?: boolean;
  /** Applied to each object before storing. Default: strip managedFields. Pass `(o) => o` to keep everything. */
  readonly transform?: Transform<T>;
  /** Extra indexes beside namespace, owner and label. */
  readonly indexers?: Readonly<Record<string, IndexFunction<T>>>;
  /** Enables read-your-own-writes for writes made through this client. */
  readonly client?: KubeClient;
  readonly pageSize?: number;
  readonly idleTimeoutMs?: number;
  readonly watchTimeoutSeconds?: readonly [number, number];
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** Called for every failure the informer recovers from. */
  readonly onError?: (error: unknown, retryInMs: number) => void;
}

/** How the informer is doing, for readiness probes and metrics. */
export interface InformerStatus {
  readonly synced: boolean;
  /** Watch connections re-opened after an error or a silent stall. */
  readonly reconnects: number;
  /** Full lists after the first (each one a 410 Gone). */
  readonly relists: number;
  readonly resourceVersion: string;
  readonly lastError: unknown;
}

export type DeltaHandler<T> = (delta: Delta<ReadonlyDeep<T>>) => void;

export class Informer<T extends KubeObject> implements ReadonlyStore<T> {
  readonly resource: ResourceClient<T>;
  readonly #options: InformerOptions<T>;
  readonly #store: Store<T>;
  readonly #ownWrites = new OwnWrites<T>();
  readonly #handlers = new Set<DeltaHandler<T>>();
  readonly #syncWaiters = new Set<() => void>();
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #status: { -readonly [K in keyof InformerStatus]: InformerStatus[K] } = {
    synced: false,
    reconnects: 0,
    relists: 0,
    resourceVersion: '',
    lastError: undefined,
  };

  constructor(resource: ResourceClient<T>, options: InformerOptions<T> = {}) {
    this.resource = resource;
    this.#options = options;
    this.#store = new Store<T>(options.indexers);
  }

  get status(): InformerStatus {
    return { ...this.#status };
  }

  get size(): number {
    // Only pending own writes can make the visible set differ from the store; skip the copy otherwise.
    return this.#ownWrites.size === 0 ? this.#store.size : this.list().length;
  }

  /** Subscribes to changes; returns the unsubscribe function. */
  onChange(handler: DeltaHandler<T>): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Starts listing and watching in the background. Idempotent. */
  start(): this {
    if (this.#loop) return this;
    this.#abort = new AbortController();
    if (this.#options.client) this.#unsubscribe = this.#trackWrites(this.#options.client);
    this.#loop = this.#run(this.#abort.signal);
    return this;
  }

  /** Stops watching; the store keeps its last content. */
  async stop(): Promise<void> {
    this.#abort?.abort();
    this.#unsubscribe?.();
    await this.#loop;
    this.#loop = undefined;
  }

  /** Resolves once the first complete list is in the store. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#status.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        this.#syncWaiters.delete(done);
        resolve();
      };
      this.#syncWaiters.add(done);
      signal?.addEventListener('abort', () => {
        this.#syncWaiters.delete(done);
        reject(signal.reason);
      });
    });
  }

  async #run(signal: AbortSignal): Promise<void> {
    const transform = this.#options.transform ?? stripManagedFields;
    const events = watcher(this.resource, {
      namespace: this.#options.namespace,
      labelSelector: this.#options.labelSelector,
      fieldSelector: this.#options.fieldSelector,
      metadataOnly: this.#options.metadataOnly,
      pageSize: this.#options.pageSize,
      idleTimeoutMs: this.#options.idleTimeoutMs,
      watchTimeoutSeconds: this.#options.watchTimeoutSeconds,
      backoff: new Backoff(this.#options.backoff),
      transform,
      signal,
      onError: (error, retryInMs) => {
        this.#status.lastError = error;
        this.#status.reconnects++;
        this.#options.onError?.(error, retryInMs);
      },
      onIdleReconnect: () => {
        this.#status.reconnects++;
      },
    });
    for await (const event of events) {
      switch (event.type) {
        case 'relisted': {
          const deltas = this.#store.replace(event.objects);
          this.#ownWrites.caughtUp((key) => this.#store.get(key)?.metadata?.resourceVersion);
          // A list from the watch cache may predate our writes, so only a consistent one retires the rest.
          if (event.consistent) this.#ownWrites.relisted(event.listStartedAt);
          if (this.#status.synced) this.#status.relists++;
          this.#status.resourceVersion = event.resourceVersion;
          this.#status.synced = true;
          for (const waiter of [...this.#syncWaiters]) waiter();
          for (const delta of deltas) this.#deliver(delta);
          break;
        }
        case 'applied': {
          const object = event.object;
          this.#ownWrites.observed(objectKey(object), object, false);
          this.#status.resourceVersion = object.metadata?.resourceVersion ?? this.#status.resourceVersion;
          const delta = this.#store.upsert(object);
          if (delta) this.#deliver(delta);
          break;
        }
        case 'deleted': {
          this.#ownWrites.observed(objectKey(event.object), event.object, true);
          this.#status.resourceVersion = event.object.metadata?.resourceVersion ?? this.#status.resourceVersion;
          const delta = this.#store.remove(event.object);
          if (delta) this.#deliver(delta);
          break;
        }
        case 'bookmark':
          this.#status.resourceVersion = event.resourceVersion;
          break;
      }
    }
  }

  #deliver(delta: Delta<T>): void {
    for (const handler of this.#handlers) {
      try {
        handler(delta as Delta<ReadonlyDeep<T>>);
      } catch (error) {
        // A failing handler must not stop the cache; it is reported like any other failure.
        this.#status.lastError = error;
        this.#options.onError?.(error, 0);
      }
    }
  }

  #trackWrites(client: KubeClient): () => void {
    const transform = this.#options.transform ?? stripManagedFields;
    // Matched by group and kind, synchronously: no discovery call (which fails while a CRD is not
    // yet served) and no gap in which a read could miss the write.
    const group = parseApiVersion(this.resource.apiVersion).group;
    return client.onWrite((event: WriteEvent) => {
      if (event.resource.group !== group || event.resource.kind !== this.resource.kind) return;
      if (this.#options.namespace && event.namespace !== this.#options.namespace) return;
      const key = keyOf(event.namespace, event.name);
      if (event.verb === 'delete' && !event.object) this.#ownWrites.recordDelete(key);
      else if (event.object) this.#ownWrites.recordWrite(key, transform(structuredClone(event.object) as T));
    });
  }

  #hasSelectors(): boolean {
    return this.#options.labelSelector !== undefined || this.#options.fieldSelector !== undefined;
  }

  /** The object at `namespace/name` (or `name`), reflecting this process's own writes. */
  get(key: string): ReadonlyDeep<T> | undefined {
    const overlay = this.#ownWrites.lookup(key);
    if (overlay && (!this.#hasSelectors() || this.#store.get(key)))
      return overlay.object as ReadonlyDeep<T> | undefined;
    return this.#store.get(key);
  }

  /** Same as `get(keyOf(namespace, name))`. */
  getByName(namespace: string | undefined, name: string): ReadonlyDeep<T> | undefined {
    return this.get(keyOf(namespace, name));
  }

  list(): ReadonlyDeep<T>[] {
    if (this.#ownWrites.size === 0) return this.#store.list();
    const result = new Map<string, ReadonlyDeep<T>>();
    for (const object of this.#store.list()) result.set(objectKey(object as T), object);
    this.#applyOverlays(result, () => true);
    return [...result.values()];
  }

  byIndex(index: string, value: string): ReadonlyDeep<T>[] {
    const found = this.#store.byIndex(index, value);
    if (this.#ownWrites.size === 0) return found;
    const result = new Map<string, ReadonlyDeep<T>>();
    for (const object of found) result.set(objectKey(object as T), object);
    this.#applyOverlays(result, (object) => this.#store.indexValues(index, object).includes(value));
    return [...result.values()];
  }

  #applyOverlays(result: Map<string, ReadonlyDeep<T>>, matches: (object: T) => boolean): void {
    for (const [key, overlay] of this.#ownWrites.entries()) {
      if (this.#hasSelectors() && !this.#store.get(key)) continue;
      if (overlay.object && matches(overlay.object)) result.set(key, overlay.object as ReadonlyDeep<T>);
      else result.delete(key);
    }
  }
}
