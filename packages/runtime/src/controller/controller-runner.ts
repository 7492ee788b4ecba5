/**
 * Runs one controller: turns cache deltas into queue keys, and runs N workers that each take a
 * key, read the latest object from the cache, and reconcile it.
 *
 * Guarantees: never two reconciles of one key at once (the queue's processing set); a reconcile
 * that throws or rejects is logged with its key and requeued with per-key exponential backoff
 * (TerminalError: logged, not retried); success forgets the key's failure history; the process
 * never exits because of a reconcile; `stop()` takes no new work and waits for the reconciles
 * in flight.
 * Caveats: the reconcile sees the cache's view (including this process's own writes), which may
 * trail the server; it must be idempotent.
 */
import type { Delta, Informer } from '@kanri/cache';
import type { KubeClient, KubeObject } from '@kanri/client';
import type { Logger } from 'pino';
import { createDeadline } from '../deadline.js';
import type { EventRecorder } from '../helpers/event-recorder.js';
import { finalizer } from '../helpers/finalizer.js';
import type { InformerPool } from '../informers/informer-pool.js';
import type { RuntimeMetrics } from '../metrics/runtime-metrics.js';
import { defaultControllerRateLimiter } from '../queue/rate-limiter.js';
import { WorkQueue } from '../queue/work-queue.js';
import { parseDuration, type ReconcileResult, requestFromKey, requestKey, TerminalError } from '../reconcile.js';
import { AppliedChildren } from './applied-children.js';
import { createContext } from './context.js';
import type { ControllerDefinition } from './definition.js';
import { requestForObject, requestsForDelta } from './event-sources.js';
import type { Predicate } from './predicates.js';

export interface RunnerDeps {
  readonly client: KubeClient;
  readonly informers: InformerPool;
  readonly metrics: RuntimeMetrics;
  readonly logger: Logger;
  readonly recorder: EventRecorder;
  /** Prefix of the field manager used for server-side apply. */
  readonly fieldManagerPrefix: string;
}

const passes = (predicates: readonly Predicate[], delta: Delta<KubeObject>) => predicates.every((p) => p(delta));

export class ControllerRunner<T extends KubeObject> {
  readonly definition: ControllerDefinition<T>;
  readonly #deps: RunnerDeps;
  readonly #log: Logger;
  readonly #appliedChildren = new AppliedChildren();
  readonly #primary: Informer<T>;
  readonly #watchedKinds: Set<string>;
  #queue: WorkQueue<string> | undefined;
  #abort: AbortController | undefined;
  #workers: Promise<void>[] = [];
  #unsubscribe: (() => void)[] = [];
  #resync: NodeJS.Timeout | undefined;

  constructor(definition: ControllerDefinition<T>, deps: RunnerDeps) {
    this.definition = definition;
    this.#deps = deps;
    this.#log = deps.logger.child({ controller: definition.name });
    // Informers are created up front so the manager can sync them before leadership is won.
    this.#primary = deps.informers.informer<T>(definition.apiVersion, definition.kind);
    this.#watchedKinds = new Set([`${definition.apiVersion}/${definition.kind}`]);
    for (const source of [...definition.owns, ...definition.watches]) {
      deps.informers.informer(source.apiVersion, source.kind);
      this.#watchedKinds.add(`${source.apiVersion}/${source.kind}`);
    }
  }

  get queueLength(): number {
    return this.#queue?.length ?? 0;
  }

  /** Begins reconciling (the manager calls this once caches are synced and leadership is held). */
  start(): void {
    if (this.#queue) return;
    const { definition, metrics } = { definition: this.definition, metrics: this.#deps.metrics };
    const queue = new WorkQueue<string>({
      name: definition.name,
      rateLimiter: (definition.rateLimiter ?? defaultControllerRateLimiter)(),
      metrics: metrics.queueMetrics(definition.name),
    });
    this.#queue = queue;
    this.#abort = new AbortController();
    const enqueue = (requests: readonly { namespace?: string; name: string }[]) => {
      for (const request of requests) queue.add(requestKey(request));
    };
    this.#unsubscribe.push(
      this.#primary.onChange((delta) => {
        if (passes(definition.predicates, delta as Delta<KubeObject>))
          enqueue(requestForObject(delta.object as KubeObject));
      }),
    );
    for (const source of [...definition.owns, ...definition.watches]) {
      const informer = this.#deps.informers.informer(source.apiVersion, source.kind);
      this.#unsubscribe.push(
        informer.onChange((delta) => {
          if (passes(source.predicates, delta as Delta<KubeObject>))
            enqueue(requestsForDelta(delta as Delta<KubeObject>, source.map));
        }),
      );
    }
    // Every existing object gets a first lap: events from before we led were not queued.
    this.#resyncAll();
    if (definition.resyncMs) {
      this.#resync = setInterval(() => this.#resyncAll(), definition.resyncMs);
      this.#resync.unref();
    }
    metrics.maxConcurrentReconciles.set({ controller: definition.name }, definition.workers);
    // Series exist from the start at 0, as controller-runtime does, so rate() and alerts work before the first error.
    const labels = { controller: definition.name };
    metrics.reconcileErrors.inc(labels, 0);
    metrics.terminalErrors.inc(labels, 0);
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const)
      metrics.reconcileTotal.inc({ ...labels, result }, 0);
    this.#workers = Array.from({ length: definition.workers }, () => this.#work(queue));
    this.#log.info({ workers: definition.workers }, 'controller started');
  }

  #resyncAll(): void {
    for (const object of this.#primary.list()) {
      for (const request of requestForObject(object as KubeObject)) this.#queue?.add(requestKey(request));
    }
  }

  async #work(queue: WorkQueue<string>): Promise<void> {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      try {
        await this.#process(queue, key);
      } finally {
        queue.done(key);
      }
    }
  }

  async #process(queue: WorkQueue<string>, key: string): Promise<void> {
    const { definition, metrics } = { definition: this.definition, metrics: this.#deps.metrics };
    const labels = { controller: definition.name };
    const log = this.#log.child({ key });
    const object = this.#primary.get(key) as T | undefined;
    if (!object) {
      // Deleted: owned children go with it through garbage collection; nothing is left to do.
      queue.forget(key);
      return;
    }
    const started = performance.now();
    metrics.activeWorkers.inc(labels);
    // No reconcile timeout: a deadline that never fires within a reconcile's life.
    const deadline = createDeadline(definition.reconcileTimeoutMs ?? 2_147_483_647, this.#abort?.signal);
    const signal = deadline.signal;
    const resource = this.#deps.client.resource<T>(definition.apiVersion, definition.kind);
    try {
      const ctx = createContext({
        request: requestFromKey(key),
        object,
        signal,
        client: this.#deps.client,
        resource,
        informers: this.#deps.informers,
        log,
        fieldManager: `${this.#deps.fieldManagerPrefix}${definition.name}`,
        recorder: this.#deps.recorder,
        watchedKinds: this.#watchedKinds,
        appliedChildren: this.#appliedChildren,
      });
      // `unknown`: a reconcile may return nothing at all (`async () => {}`), which TypeScript types as void.
      let result: unknown;
      if (definition.finalizer) {
        const { name, cleanup } = definition.finalizer;
        result = await finalizer(resource, name, object, async (event) =>
          event.type === 'cleanup' ? cleanup(event.object, ctx) : definition.reconcile(event.object, ctx),
        );
      } else {
        result = await definition.reconcile(object, ctx);
      }
      queue.forget(key);
      const requeueAfter = (result as ReconcileResult)?.requeueAfter;
      if (requeueAfter !== undefined) {
        queue.addAfter(key, parseDuration(requeueAfter));
        metrics.reconcileTotal.inc({ ...labels, result: 'requeue_after' });
      } else {
        metrics.reconcileTotal.inc({ ...labels, result: 'success' });
      }
    } catch (error) {
      metrics.reconcileTotal.inc({ ...labels, result: 'error' });
      metrics.reconcileErrors.inc(labels);
      if (error instanceof TerminalError) {
        metrics.terminalErrors.inc(labels);
        queue.forget(key);
        log.error({ err: error }, 'reconcile failed terminally; not retrying until the object changes');
      } else {
        const retries = queue.numRequeues(key);
        queue.addRateLimited(key);
        log.error({ err: error, retries }, 'reconcile failed; requeued with backoff');
      }
    } finally {
      deadline.dispose();
      metrics.activeWorkers.dec(labels);
      metrics.reconcileTime.observe(labels, (performance.now() - started) / 1000);
    }
  }

  /**
   * Takes no new work and waits for the reconciles in flight; after `graceMs` their `ctx.signal`
   * aborts so that well-behaved I/O ends promptly. With `abandon` (leadership lost: another
   * manager may already be reconciling), keys still waiting are dropped and the reconciles in
   * flight are aborted at once, so their writes fail instead of racing the new leader's.
   */
  async stop(graceMs = 30_000, options: { abandon?: boolean } = {}): Promise<void> {
    const queue = this.#queue;
    if (!queue) return;
    clearInterval(this.#resync);
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.#unsubscribe = [];
    if (options.abandon) {
      this.#abort?.abort();
      queue.shutDown({ discardWaiting: true });
    }
    const grace = setTimeout(() => this.#abort?.abort(), graceMs);
    await queue.shutDownWithDrain();
    await Promise.all(this.#workers);
    clearTimeout(grace);
    this.#abort?.abort();
    this.#queue = undefined;
    this.#log.info('controller stopped');
  }
}
