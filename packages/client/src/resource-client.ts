/**
 * Operations on one resource (a kind in an apiVersion): get, list (paginated), create, update,
 * patch (merge, JSON, strategic), server-side apply, delete, watch, and the status subresource.
 * Objects go over the wire as plain JSON, so fields the types do not know survive every round trip.
 */
import { errorFromResponse, KubeError, type RequestContext, type Status } from './errors.js';
import { qualifiedResource, type ResourceInfo, resourcePath } from './resource-info.js';
import type { HttpMethod, HttpRequest, HttpTransport } from './transport/http-transport.js';
import { parseNdjson } from './transport/ndjson.js';
import type { KubeList, KubeObject, WatchEvent } from './types.js';

export type LabelSelector = string | Readonly<Record<string, string>>;

export interface ReadOptions {
  readonly namespace?: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export interface ListOptions extends ReadOptions {
  readonly labelSelector?: LabelSelector;
  readonly fieldSelector?: string;
  /** Page size. `list()` returns one page; `listAll()` follows continue tokens. */
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  /** Ask only for metadata (PartialObjectMetadata), for kinds whose body is not needed. */
  readonly metadataOnly?: boolean;
}

export interface WatchOptions extends Omit<ListOptions, 'limit' | 'continue' | 'timeoutMs'> {
  /** Default true: the server sends BOOKMARK events carrying fresh resource versions. */
  readonly allowWatchBookmarks?: boolean;
  /** The server ends the watch after this many seconds. */
  readonly timeoutSeconds?: number;
  readonly sendInitialEvents?: boolean;
}

export interface WriteOptions {
  readonly fieldManager?: string;
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
  /** For namespaced kinds when the object (or name) does not say. */
  readonly namespace?: string;
}

export interface ApplyOptions extends WriteOptions {
  readonly fieldManager: string;
  /** Take ownership of fields other managers own, instead of failing with a conflict. */
  readonly force?: boolean;
}

export type PatchType = 'merge' | 'json' | 'strategic';

export interface PatchOptions extends WriteOptions {
  readonly type?: PatchType;
}

export interface DeleteOptions extends WriteOptions {
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly gracePeriodSeconds?: number;
}

/** A write this process made, as seen by `KubeClient.onWrite` listeners (the cache uses it to read its own writes). */
export interface WriteEvent {
  readonly resource: ResourceInfo;
  readonly verb: 'create' | 'update' | 'patch' | 'apply' | 'delete';
  readonly namespace: string | undefined;
  readonly name: string;
  /** The object as the server returned it; undefined when a delete removed it at once. */
  readonly object: KubeObject | undefined;
}

const PATCH_CONTENT_TYPES: Record<PatchType | 'apply', string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_OBJECT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/** `{ app: 'db', tier: 'x' }` → `app=db,tier=x`. Pure. */
export function formatLabelSelector(selector: LabelSelector | undefined): string | undefined {
  if (selector === undefined || typeof selector === 'string') return selector;
  return Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

export class ResourceClient<T extends KubeObject = KubeObject> {
  readonly #transport: HttpTransport;
  readonly #resolve: () => Promise<ResourceInfo>;
  #resolved: Promise<ResourceInfo> | undefined;
  readonly #notify: (event: WriteEvent) => void;
  readonly apiVersion: string;
  readonly kind: string;

  constructor(
    transport: HttpTransport,
    apiVersion: string,
    kind: string,
    resolve: () => Promise<ResourceInfo>,
    notify: (event: WriteEvent) => void,
  ) {
    this.#transport = transport;
    this.apiVersion = apiVersion;
    this.kind = kind;
    this.#resolve = resolve;
    this.#notify = notify;
  }

  /** Discovery's answer for this kind (plural, scope, verbs, subresources); a failed lookup is retried on the next call. */
  info(): Promise<ResourceInfo> {
    if (!this.#resolved) {
      this.#resolved = this.#resolve();
      // A CRD installed a moment later must be found on the next call, so failures are not kept.
      this.#resolved.catch(() => {
        this.#resolved = undefined;
      });
    }
    return this.#resolved;
  }

  async #namespaceFor(
    info: ResourceInfo,
    name: string,
    explicit: string | undefined,
    fromObject?: string,
  ): Promise<string | undefined> {
    if (!info.namespaced) return undefined;
    const namespace = fromObject ?? explicit;
    if (!namespace)
      throw new KubeError(`${this.kind} "${name}": metadata.namespace is required, since ${this.kind} is namespaced`);
    return namespace;
  }

  #nameOf(object: KubeObject, verb: string): string {
    const name = object.metadata?.name;
    if (!name) throw new KubeError(`${verb} ${this.kind}: metadata.name is required`);
    return name;
  }

  async #request<R>(
    info: ResourceInfo,
    method: HttpMethod,
    verb: string,
    path: string,
    extra: Partial<HttpRequest> & { name?: string },
  ): Promise<R> {
    const context: Omit<RequestContext, 'method' | 'path'> = {
      verb,
      resource: qualifiedResource(info),
      name: extra.name,
    };
    return verb === 'list'
      ? (this.#transport.list({ method, path, ...extra, context }) as Promise<R & { items: unknown[] }>)
      : this.#transport.json<R>({ method, path, ...extra, context });
  }

  async get(name: string, options: ReadOptions = {}): Promise<T> {
    const info = await this.info();
    const namespace = await this.#namespaceFor(info, name, options.namespace);
    return this.#request<T>(info, 'GET', 'get', resourcePath(info, namespace, name), {
      name,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
  }

  /** One page of objects; all namespaces unless `namespace` is given. */
  async list(options: ListOptions = {}): Promise<KubeList<T>> {
    const info = await this.info();
    return this.#request<KubeList<T>>(info, 'GET', 'list', resourcePath(info, options.namespace), {
      query: {
        labelSelector: formatLabelSelector(options.labelSelector),
        fieldSelector: options.fieldSelector,
        limit: options.limit,
        continue: options.continue,
        resourceVersion: options.resourceVersion,
        resourceVersionMatch: options.resourceVersionMatch,
      },
      accept: options.metadataOnly ? METADATA_LIST : undefined,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
  }

  /** Every page, following continue tokens (default page size 500). */
  async *listPages(options: ListOptions = {}): AsyncGenerator<KubeList<T>> {
    let token = options.continue;
    let first = true;
    do {
      // A continue token carries the list's resourceVersion; the server refuses both together.
      const version = first
        ? { resourceVersion: options.resourceVersion, resourceVersionMatch: options.resourceVersionMatch }
        : { resourceVersion: undefined, resourceVersionMatch: undefined };
      const page = await this.list({ ...options, ...version, limit: options.limit ?? 500, continue: token });
      yield page;
      first = false;
      token = page.metadata.continue || undefined;
    } while (token);
  }

  /** Every object, page by page. */
  async *listAll(options: ListOptions = {}): AsyncGenerator<T> {
    for await (const page of this.listPages(options)) yield* page.items;
  }

  async create(object: T, options: WriteOptions = {}): Promise<T> {
    const info = await this.info();
    const name = object.metadata?.name ?? object.metadata?.generateName ?? '';
    const namespace = await this.#namespaceFor(info, name, options.namespace, object.metadata?.namespace);
    const created = await this.#request<T>(info, 'POST', 'create', resourcePath(info, namespace), {
      name,
      body: { apiVersion: this.apiVersion, kind: this.kind, ...object },
      query: writeQuery(options),
      signal: options.signal,
    });
    this.#emit(info, 'create', created, options);
    return created;
  }

  /** PUT: replaces the object; with `metadata.resourceVersion` set, fails with ConflictError if it changed. */
  async update(object: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(object, options, undefined);
  }

  async updateStatus(object: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(object, options, 'status');
  }

  async #put(object: T, options: WriteOptions, subresource: string | undefined): Promise<T> {
    const info = await this.info();
    const name = this.#nameOf(object, 'update');
    const namespace = await this.#namespaceFor(info, name, options.namespace, object.metadata?.namespace);
    const updated = await this.#request<T>(info, 'PUT', 'update', resourcePath(info, namespace, name, subresource), {
      name,
      body: { apiVersion: this.apiVersion, kind: this.kind, ...object },
      query: writeQuery(options),
      signal: options.signal,
    });
    if (!options.dryRun) this.#emit(info, 'update', updated, options);
    return updated;
  }

  async patch(name: string, patch: unknown, options: PatchOptions = {}): Promise<T> {
    return this.#patch(name, patch, options, undefined);
  }

  async patchStatus(name: string, patch: unknown, options: PatchOptions = {}): Promise<T> {
    return this.#patch(name, patch, options, 'status');
  }

  async #patch(name: string, patch: unknown, options: PatchOptions, subresource: string | undefined): Promise<T> {
    const info = await this.info();
    const namespace = await this.#namespaceFor(info, name, options.namespace);
    const patched = await this.#request<T>(info, 'PATCH', 'patch', resourcePath(info, namespace, name, subresource), {
      name,
      body: patch,
      contentType: PATCH_CONTENT_TYPES[options.type ?? 'merge'],
      query: writeQuery(options),
      signal: options.signal,
    });
    if (!options.dryRun) this.#emit(info, 'patch', patched, options);
    return patched;
  }

  /**
   * Server-side apply: sends the fields this manager wants to own. Applying the same object again
   * changes nothing on the server (its resourceVersion stays).
   */
  async apply(object: T, options: ApplyOptions): Promise<T> {
    return this.#apply(object, options, undefined);
  }

  async applyStatus(object: T, options: ApplyOptions): Promise<T> {
    return this.#apply(object, options, 'status');
  }

  async #apply(object: T, options: ApplyOptions, subresource: string | undefined): Promise<T> {
    const info = await this.info();
    const name = this.#nameOf(object, 'apply');
    const namespace = await this.#namespaceFor(info, name, options.namespace, object.metadata?.namespace);
    const applied = await this.#request<T>(info, 'PATCH', 'patch', resourcePath(info, namespace, name, subresource), {
      name,
      // JSON is valid YAML, so the apply content type takes it as is.
      body: { apiVersion: this.apiVersion, kind: this.kind, ...object },
      contentType: PATCH_CONTENT_TYPES.apply,
      query: { ...writeQuery(options), force: options.force ? true : undefined },
      signal: options.signal,
    });
    if (!options.dryRun) this.#emit(info, 'apply', applied, options);
    return applied;
  }

  /** Deletes; resolves with the object while finalizers hold it, or undefined once it is gone. */
  async delete(name: string, options: DeleteOptions = {}): Promise<T | undefined> {
    const info = await this.info();
    const namespace = await this.#namespaceFor(info, name, options.namespace);
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: options.propagationPolicy,
      preconditions: options.preconditions,
      gracePeriodSeconds: options.gracePeriodSeconds,
      dryRun: options.dryRun ? ['All'] : undefined,
    };
    const result = await this.#request<T | Status>(info, 'DELETE', 'delete', resourcePath(info, namespace, name), {
      name,
      body,
      signal: options.signal,
    });
    const object = (result as Status).kind === 'Status' ? undefined : (result as T);
    if (!options.dryRun) {
      this.#notify({ resource: info, verb: 'delete', namespace, name, object });
    }
    return object;
  }

  async getStatus(name: string, options: ReadOptions = {}): Promise<T> {
    const info = await this.info();
    const namespace = await this.#namespaceFor(info, name, options.namespace);
    return this.#request<T>(info, 'GET', 'get', resourcePath(info, namespace, name, 'status'), {
      name,
      signal: options.signal,
    });
  }

  /**
   * Watches for changes. The iterator ends when the server closes the stream (for example after
   * `timeoutSeconds`); a server ERROR event is thrown as the matching ApiError (GoneError for 410).
   */
  async *watch(options: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    const info = await this.info();
    const path = resourcePath(info, options.namespace);
    const context: RequestContext = { method: 'GET', path, verb: 'watch', resource: qualifiedResource(info) };
    const body = await this.#transport.stream({
      method: 'GET',
      path,
      query: {
        watch: 1,
        allowWatchBookmarks: options.allowWatchBookmarks ?? true,
        resourceVersion: options.resourceVersion,
        resourceVersionMatch: options.resourceVersionMatch,
        sendInitialEvents: options.sendInitialEvents,
        timeoutSeconds: options.timeoutSeconds,
        labelSelector: formatLabelSelector(options.labelSelector),
        fieldSelector: options.fieldSelector,
      },
      accept: options.metadataOnly ? METADATA_OBJECT : undefined,
      signal: options.signal,
      context,
    });
    try {
      for await (const value of parseNdjson(body)) {
        const event = value as { type: string; object: unknown };
        if (event.type === 'ERROR') {
          const status = event.object as Status;
          throw errorFromResponse(status.code ?? 500, status, context);
        }
        yield event as WatchEvent<T>;
      }
    } finally {
      body.destroy();
    }
  }

  #emit(info: ResourceInfo, verb: WriteEvent['verb'], object: T, options: WriteOptions): void {
    if (options.dryRun) return;
    this.#notify({
      resource: info,
      verb,
      namespace: object.metadata?.namespace,
      name: object.metadata?.name ?? '',
      object,
    });
  }
}

function writeQuery(options: WriteOptions): Record<string, string | undefined> {
  return { fieldManager: options.fieldManager, dryRun: options.dryRun ? 'All' : undefined };
}
