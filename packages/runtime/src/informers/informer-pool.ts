/** Shared informers: one per kind and namespace scope for the whole manager, however many controllers read it. */
import { Informer } from '@kanri/cache';
import { type KubeClient, type KubeObject, qualifiedResource } from '@kanri/client';
import type { Logger } from 'pino';
import type { RuntimeMetrics } from '../metrics/runtime-metrics.js';

/**
 * What the manager's informers hold, per kind (controller-runtime's `cache.Options.ByObject`).
 * A label selector keeps objects the operator does not own (every Secret in the cluster, say)
 * out of memory; a `get` of such an object then misses the cache, and the caller reads it from
 * the API server when it must know.
 *
 * @example
 * ```ts
 * const cache: CacheOptions = { byKind: { 'v1/Secret': { labelSelector: 'app.kubernetes.io/managed-by=kanri' } } };
 * ```
 */
export interface CacheOptions {
  /** Keyed `apiVersion/Kind`, as `v1/Secret` or `apps/v1/Deployment`. */
  readonly byKind?: Readonly<Record<string, { readonly labelSelector?: string }>>;
}

export class InformerPool {
  readonly #client: KubeClient;
  readonly #namespace: string | undefined;
  readonly #cache: CacheOptions;
  readonly #informers = new Map<string, Informer<KubeObject>>();
  readonly #metrics: RuntimeMetrics;
  readonly #logger: Logger;
  #started = false;

  constructor(
    client: KubeClient,
    namespace: string | undefined,
    metrics: RuntimeMetrics,
    logger: Logger,
    cache: CacheOptions = {},
  ) {
    this.#client = client;
    this.#namespace = namespace;
    this.#cache = cache;
    this.#metrics = metrics;
    this.#logger = logger;
  }

  /** The shared informer for a kind; created on first request and started if the pool runs. */
  informer<T extends KubeObject = KubeObject>(apiVersion: string, kind: string): Informer<T> {
    const key = `${apiVersion}/${kind}`;
    let informer = this.#informers.get(key);
    if (!informer) {
      const resource = this.#client.resource(apiVersion, kind);
      const log = this.#logger.child({ informer: key });
      const labelSelector = this.#cache.byKind?.[key]?.labelSelector;
      informer = new Informer(resource, {
        namespace: this.#namespace,
        ...(labelSelector ? { labelSelector } : {}),
        client: this.#client,
        onError: (error, retryInMs) => log.warn({ err: error, retryInMs }, 'watch failed; retrying'),
      });
      const created = informer;
      // Discovery succeeds once the informer has listed (a CRD may not be served before that).
      void created
        .waitForSync()
        .then(() => resource.info())
        .then(
          (info) => this.#metrics.trackInformer(qualifiedResource(info), () => created.status),
          () => {},
        );
      this.#informers.set(key, informer);
      if (this.#started) informer.start();
    }
    return informer as unknown as Informer<T>;
  }

  /** Looks up an informer without creating one. */
  existing<T extends KubeObject = KubeObject>(apiVersion: string, kind: string): Informer<T> | undefined {
    return this.#informers.get(`${apiVersion}/${kind}`) as unknown as Informer<T> | undefined;
  }

  start(): void {
    this.#started = true;
    for (const informer of this.#informers.values()) informer.start();
  }

  get synced(): boolean {
    return [...this.#informers.values()].every((i) => i.status.synced);
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.waitForSync(signal)));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.stop()));
  }
}
