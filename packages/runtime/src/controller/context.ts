/** What a reconcile gets besides its object: the cache, the client, and helpers that apply children, write status and record events. */
import { keyOf } from '@kanri/cache';
import type { KubeClient, KubeObject, ResourceClient } from '@kanri/client';
import type { Logger } from 'pino';
import { jsonEqual } from '../helpers/conditions.js';
import type { EventRecorder, EventType } from '../helpers/event-recorder.js';
import { withOwner } from '../helpers/owner-reference.js';
import type { InformerPool } from '../informers/informer-pool.js';
import type { Request } from '../reconcile.js';
import type { AppliedChildren } from './applied-children.js';

export interface ReconcileContext<T extends KubeObject> {
  readonly request: Request;
  /** Aborts on the per-reconcile timeout or when the controller stops. Pass it to long I/O. */
  readonly signal: AbortSignal;
  readonly client: KubeClient;
  /** The primary kind's resource handle. */
  readonly resource: ResourceClient<T>;
  /** Logger bound to the controller and key. */
  readonly log: Logger;
  /** A cached object of a kind this controller owns or watches. */
  get<C extends KubeObject = KubeObject>(
    apiVersion: string,
    kind: string,
    name: string,
    namespace?: string,
  ): C | undefined;
  /** Cached objects of a kind this controller owns or watches, optionally only those controlled by `ownedBy`. */
  list<C extends KubeObject = KubeObject>(
    apiVersion: string,
    kind: string,
    options?: { namespace?: string; ownedBy?: KubeObject },
  ): C[];
  /**
   * Server-side applies `child` as controlled by the primary object (ownerReference set). No
   * change, no write. No request at all when this controller applied the same child before and
   * the cache still holds the version that apply produced (kinds it owns or watches): then the
   * cached copy is returned. A change by anyone else gives a new version, and the next apply
   * puts the child back.
   */
  apply<C extends KubeObject>(child: C): Promise<C>;
  /** Writes `status` through the status subresource, only if it differs from the cached status. */
  setStatus(status: unknown): Promise<void>;
  /** Records a Kubernetes Event about the primary object (best-effort, aggregated, rate-limited). */
  event(type: EventType, reason: string, note: string): Promise<void>;
}

export interface ContextDeps<T extends KubeObject> {
  readonly request: Request;
  readonly object: T;
  readonly signal: AbortSignal;
  readonly client: KubeClient;
  readonly resource: ResourceClient<T>;
  readonly informers: InformerPool;
  readonly log: Logger;
  readonly fieldManager: string;
  readonly recorder: EventRecorder;
  readonly watchedKinds: ReadonlySet<string>;
  /** The controller's record of its applies, kept across reconciles. */
  readonly appliedChildren: AppliedChildren;
}

export function createContext<T extends KubeObject>(deps: ContextDeps<T>): ReconcileContext<T> {
  const cached = (apiVersion: string, kind: string) => {
    const informer = deps.watchedKinds.has(`${apiVersion}/${kind}`)
      ? deps.informers.existing(apiVersion, kind)
      : undefined;
    if (!informer) {
      throw new Error(
        `${kind} (${apiVersion}) is not cached for this controller; declare it with .owns() or .watches(), or use ctx.client`,
      );
    }
    return informer;
  };
  return {
    request: deps.request,
    signal: deps.signal,
    client: deps.client,
    resource: deps.resource,
    log: deps.log,
    get: <C extends KubeObject>(apiVersion: string, kind: string, name: string, namespace = deps.request.namespace) =>
      cached(apiVersion, kind).get(keyOf(namespace, name)) as C | undefined,
    list: <C extends KubeObject>(
      apiVersion: string,
      kind: string,
      options: { namespace?: string; ownedBy?: KubeObject } = {},
    ) => {
      const informer = cached(apiVersion, kind);
      const uid = options.ownedBy?.metadata?.uid;
      let objects = (uid ? informer.byIndex('owner', uid) : informer.list()) as KubeObject[];
      if (options.namespace) objects = objects.filter((o) => o.metadata?.namespace === options.namespace);
      return objects as C[];
    },
    apply: async <C extends KubeObject>(child: C) => {
      const owned = withOwner(child, deps.object);
      const { apiVersion, kind, metadata } = owned;
      const live =
        apiVersion && kind && metadata?.name && deps.watchedKinds.has(`${apiVersion}/${kind}`)
          ? (deps.informers.existing(apiVersion, kind)?.get(keyOf(metadata.namespace, metadata.name)) as C | undefined)
          : undefined;
      if (live && deps.appliedChildren.unchanged(owned, live)) return live;
      const result = await deps.client
        .resourceFor(owned)
        .apply(owned, { fieldManager: deps.fieldManager, force: true, signal: deps.signal });
      deps.appliedChildren.applied(owned, result);
      return result;
    },
    setStatus: async (status: unknown) => {
      const current = (deps.object as KubeObject & { status?: unknown }).status;
      if (jsonEqual(current, status)) return;
      const meta = deps.object.metadata ?? {};
      // A JSON patch `add` replaces the whole status, so fields the reconcile dropped are dropped on the server too.
      await deps.resource.patchStatus(meta.name ?? '', [{ op: 'add', path: '/status', value: status }], {
        namespace: meta.namespace,
        type: 'json',
        signal: deps.signal,
      });
    },
    event: (type, reason, note) => deps.recorder.record(deps.object, type, reason, note),
  };
}
