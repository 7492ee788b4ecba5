/**
 * The declarative controller builder: `controller(apiVersion, kind).owns(…).watches(…).reconcile(fn)`,
 * with controller-runtime's vocabulary and kube-rs's size.
 */
import type { KubeObject, ObjectOf } from '@kanri/client';
import type { RateLimiter } from '../queue/rate-limiter.js';
import { type Duration, parseDuration } from '../reconcile.js';
import type { ControllerDefinition, ReconcileFunction, WatchSource } from './definition.js';
import { type MapFunction, requestForOwner } from './event-sources.js';
import type { Predicate } from './predicates.js';

export interface BuilderOptions {
  /** Reconciles running at once (never two for the same key). Default 2. */
  readonly workers?: number;
  /** Visit every object this often even without events. Default 10 minutes; 0 disables. */
  readonly resync?: Duration;
  /** Abort a reconcile's `ctx.signal` after this long. Default none. */
  readonly reconcileTimeout?: Duration;
  /** Controller name (logs, metrics, field manager). Default: the kind in lower case. */
  readonly name?: string;
}

export class ControllerBuilder<T extends KubeObject> {
  readonly #apiVersion: string;
  readonly #kind: string;
  #options: BuilderOptions = {};
  #predicates: Predicate[] = [];
  readonly #owns: WatchSource[] = [];
  readonly #watches: WatchSource[] = [];
  #finalizer: ControllerDefinition<T>['finalizer'];
  #rateLimiter: (() => RateLimiter<string>) | undefined;

  constructor(apiVersion: string, kind: string) {
    this.#apiVersion = apiVersion;
    this.#kind = kind;
  }

  /** Only events passing every predicate wake the controller for the primary kind. */
  withPredicates(...predicates: Predicate[]): this {
    this.#predicates.push(...predicates);
    return this;
  }

  /** Children of this kind whose controller ownerReference points at a primary object wake that object. */
  owns(apiVersion: string, kind: string, ...predicates: Predicate[]): this {
    this.#owns.push({ apiVersion, kind, map: requestForOwner(this.#apiVersion, this.#kind), predicates });
    return this;
  }

  /** Objects of this kind wake whichever primary objects `map` names. */
  watches(apiVersion: string, kind: string, map: MapFunction, ...predicates: Predicate[]): this {
    this.#watches.push({ apiVersion, kind, map, predicates });
    return this;
  }

  options(options: BuilderOptions): this {
    this.#options = { ...this.#options, ...options };
    return this;
  }

  rateLimiter(factory: () => RateLimiter<string>): this {
    this.#rateLimiter = factory;
    return this;
  }

  /**
   * Manages finalizer `name`: it is added on first sight; on deletion `cleanup` runs and the
   * finalizer is removed only once `cleanup` succeeded. A failing cleanup is retried with backoff.
   */
  finalizer(name: string, cleanup: ReconcileFunction<T>): this {
    this.#finalizer = { name, cleanup };
    return this;
  }

  /** Completes the controller with its reconcile function. */
  reconcile(reconcile: ReconcileFunction<T>): ControllerDefinition<T> {
    const workers = this.#options.workers ?? 2;
    if (!Number.isInteger(workers) || workers < 1)
      throw new RangeError(`controller ${this.#kind}: workers must be a whole number ≥ 1, got ${workers}`);
    const resync = this.#options.resync === undefined ? 600_000 : parseDuration(this.#options.resync);
    return {
      name: this.#options.name ?? this.#kind.toLowerCase(),
      apiVersion: this.#apiVersion,
      kind: this.#kind,
      predicates: this.#predicates,
      owns: this.#owns,
      watches: this.#watches,
      workers,
      resyncMs: resync > 0 ? resync : undefined,
      reconcileTimeoutMs:
        this.#options.reconcileTimeout === undefined ? undefined : parseDuration(this.#options.reconcileTimeout),
      rateLimiter: this.#rateLimiter,
      finalizer: this.#finalizer,
      reconcile,
    };
  }
}

/**
 * Starts a controller definition for the primary kind.
 *
 * @example
 * ```ts
 * export default controller('example.com/v1', 'Website')
 *   .owns('apps/v1', 'Deployment')
 *   .owns('v1', 'Service')
 *   .reconcile(async (site, ctx) => {
 *     await ctx.apply(buildDeployment(site));
 *     await ctx.apply(buildService(site));
 *     await ctx.setStatus({ ready: true });
 *   });
 * ```
 */
export function controller<T extends KubeObject = never, V extends string = string, K extends string = string>(
  apiVersion: V,
  kind: K,
): ControllerBuilder<[T] extends [never] ? ObjectOf<V, K> & KubeObject : T> {
  // With an explicit type argument (a custom resource type) it wins; otherwise built-in kinds are inferred.
  return new ControllerBuilder(apiVersion, kind);
}
