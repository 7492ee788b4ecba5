/** What a reconcile gets besides its object: the cache, the client, and helpers that apply children, write status and record events. */
import { keyOf } from '@kanri/cache';
import {
  type DeleteOptions,
  isAlreadyExists,
  isNotFound,
  type KubeClient,
  type KubeObject,
  type ResourceClient,
} from '@kanri/client';
import type { Logger } from 'pino';
import { jsonEqual } from '../helpers/conditions.js';
import type { EventRecorder, EventType } from '../helpers/event-recorder.js';
import { withOwner } from '../helpers/owner-reference.js';
import type { InformerPool } from '../informers/informer-pool.js';
import type { Request } from '../reconcile.js';
import type { AppliedChildren } from './applied-children.js';

/** Names an object without holding it: what `ctx.delete` needs. The namespace defaults to the request's. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

/** What `ctx.applyMetadata` sets. */
export interface MetadataPatch {
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

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
  /**
   * Creates `child` as controlled by the primary object (ownerReference set), for objects that
   * are written once (a Pod, a PVC) rather than applied. Resolves the created object, or
   * `undefined` when an object of that name already exists (409 AlreadyExists): a cache that has
   * not seen it yet is normal, and the existing object is not read back (the cache brings it).
   * Other failures reject.
   *
   * @example
   * ```ts
   * if (!ctx.get('v1', 'PersistentVolumeClaim', claim.metadata.name)) await ctx.create(claim);
   * ```
   */
  create<C extends KubeObject>(child: C): Promise<C | undefined>;
  /**
   * Deletes an object, given itself or an {@link ObjectRef} (namespace default: the request's).
   * Resolves true when this call deleted it (or began its deletion), false when it was already
   * gone (404): a cache that still shows a deleted object is normal. Other failures reject.
   *
   * @example
   * ```ts
   * await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name: 'db-2' });
   * ```
   */
  delete(target: KubeObject | ObjectRef, options?: Omit<DeleteOptions, 'namespace' | 'signal'>): Promise<boolean>;
  /**
   * Server-side applies only labels and annotations onto an existing object, under the field
   * manager `<controller's field manager>/metadata`: the controller claims no field of a spec it
   * does not write (a Pod's, say). No request when the cached object (kinds the controller owns or
   * watches) already carries every given label and annotation; so a key left out later is removed
   * only at the next write that happens for another reason.
   *
   * @example
   * ```ts
   * await ctx.applyMetadata(pod, { labels: { 'example.com/tier': 'db' } });
   * ```
   */
  applyMetadata(object: KubeObject, metadata: MetadataPatch): Promise<void>;
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
    create: async <C extends KubeObject>(child: C) => {
      const owned = withOwner(child, deps.object);
      try {
        return await deps.client.resourceFor(owned).create(owned, { signal: deps.signal });
      } catch (error) {
        if (isAlreadyExists(error)) return undefined;
        throw error;
      }
    },
    delete: async (target: KubeObject | ObjectRef, options = {}) => {
      const ref = 'name' in target ? target : refOf(target);
      try {
        await deps.client
          .resource(ref.apiVersion, ref.kind)
          .delete(ref.name, { ...options, namespace: ref.namespace ?? deps.request.namespace, signal: deps.signal });
        return true;
      } catch (error) {
        if (isNotFound(error)) return false;
        throw error;
      }
    },
    applyMetadata: async (object: KubeObject, metadata: MetadataPatch) => {
      const { apiVersion, kind } = refOf(object);
      const name = object.metadata?.name ?? '';
      const namespace = object.metadata?.namespace ?? deps.request.namespace;
      const live = deps.watchedKinds.has(`${apiVersion}/${kind}`)
        ? deps.informers.existing(apiVersion, kind)?.get(keyOf(namespace, name))
        : undefined;
      const carries = (have: Readonly<Record<string, string>> | undefined, want = {}) =>
        Object.entries(want).every(([key, value]) => have?.[key] === value);
      if (
        live &&
        carries(live.metadata?.labels, metadata.labels) &&
        carries(live.metadata?.annotations, metadata.annotations)
      )
        return;
      const patch: KubeObject = {
        apiVersion,
        kind,
        metadata: { name, namespace, labels: metadata.labels, annotations: metadata.annotations },
      };
      await deps.client
        .resourceFor(patch)
        .apply(patch, { fieldManager: `${deps.fieldManager}/metadata`, force: true, signal: deps.signal });
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

function refOf(object: KubeObject): ObjectRef {
  const { apiVersion, kind } = object;
  const name = object.metadata?.name;
  if (!apiVersion || !kind || !name) {
    throw new Error(`object ${kind ?? '?'} "${name ?? '?'}" needs apiVersion, kind and metadata.name`);
  }
  return { apiVersion, kind, name, namespace: object.metadata?.namespace };
}
