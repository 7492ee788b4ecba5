/** A controller as declared by the builder: what it watches and how it reconciles. Data only. */
import type { KubeObject } from '@kanri/client';
import type { RateLimiter } from '../queue/rate-limiter.js';
import type { ReconcileResult } from '../reconcile.js';
import type { ReconcileContext } from './context.js';
import type { MapFunction } from './event-sources.js';
import type { Predicate } from './predicates.js';

export interface WatchSource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly map: MapFunction;
  readonly predicates: readonly Predicate[];
}

// biome-ignore lint/suspicious/noConfusingVoidType: `async () => {}` is a valid reconcile, and its type is Promise<void>.
type ReconcileReturn = ReconcileResult | undefined | void;

export type ReconcileFunction<T extends KubeObject> = (
  object: T,
  ctx: ReconcileContext<T>,
) => Promise<ReconcileReturn> | ReconcileReturn;

export interface ControllerDefinition<T extends KubeObject = KubeObject> {
  readonly name: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly predicates: readonly Predicate[];
  readonly owns: readonly WatchSource[];
  readonly watches: readonly WatchSource[];
  readonly workers: number;
  readonly resyncMs: number | undefined;
  readonly reconcileTimeoutMs: number | undefined;
  readonly rateLimiter: (() => RateLimiter<string>) | undefined;
  readonly finalizer: { readonly name: string; readonly cleanup: ReconcileFunction<T> } | undefined;
  readonly reconcile: ReconcileFunction<T>;
}
