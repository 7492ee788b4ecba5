/** KubeClient: the entry point. One transport (one connection pool) and one discovery cache per cluster. */
import { type ClusterConnection, type LoadKubeconfigOptions, loadKubeconfig } from './config/load-kubeconfig.js';
import { Discovery } from './discovery.js';
import { KubeError } from './errors.js';
import { type ApplyOptions, ResourceClient, type WriteEvent } from './resource-client.js';
import type { ResourceInfo } from './resource-info.js';
import { type HttpRequest, HttpTransport, type TransportOptions } from './transport/http-transport.js';
import type { KubeObject, ObjectOf } from './types.js';

export type WriteListener = (event: WriteEvent) => void;

export interface KubeClientOptions extends LoadKubeconfigOptions, TransportOptions {}

/**
 * A client for one cluster.
 *
 * @example
 * ```ts
 * import { KubeClient } from '@kanri/client';
 *
 * const client = await KubeClient.load();             // KUBECONFIG, ~/.kube/config or in-cluster
 * const configMaps = client.resource('v1', 'ConfigMap'); // typed as kubernetes-types' ConfigMap
 * await configMaps.apply(
 *   { metadata: { name: 'settings', namespace: 'default' }, data: { mode: 'fast' } },
 *   { fieldManager: 'my-operator' },
 * );
 * for await (const cm of configMaps.listAll({ namespace: 'default' })) console.log(cm.metadata?.name);
 * await client.close();
 * ```
 */
export class KubeClient {
  readonly connection: ClusterConnection;
  readonly transport: HttpTransport;
  readonly discovery: Discovery;
  readonly #listeners = new Set<WriteListener>();
  readonly #resources = new Map<string, ResourceClient<KubeObject>>();

  constructor(connection: ClusterConnection, options: TransportOptions = {}) {
    this.connection = connection;
    this.transport = new HttpTransport(connection, options);
    this.discovery = new Discovery(this.transport);
  }

  /** Loads the kubeconfig (see `loadKubeconfig`) and connects. */
  static async load(options: KubeClientOptions = {}): Promise<KubeClient> {
    return new KubeClient(await loadKubeconfig(options), options);
  }

  /** The namespace of the kubeconfig context (`default` if it names none). */
  get namespace(): string {
    return this.connection.namespace;
  }

  /** A handle on one kind; built-in kinds are typed from kubernetes-types. Resolved through discovery on first use. */
  resource<V extends string, K extends string>(apiVersion: V, kind: K): ResourceClient<ObjectOf<V, K>>;
  resource<T extends KubeObject>(apiVersion: string, kind: string): ResourceClient<T>;
  resource(apiVersion: string, kind: string): ResourceClient<KubeObject> {
    const key = `${apiVersion}/${kind}`;
    let handle = this.#resources.get(key);
    if (!handle) {
      handle = new ResourceClient(
        this.transport,
        apiVersion,
        kind,
        () => this.discovery.resolve(apiVersion, kind),
        (event) => this.#emit(event),
      );
      this.#resources.set(key, handle);
    }
    return handle;
  }

  /** The handle for an object's own apiVersion and kind. */
  resourceFor<T extends KubeObject>(object: T): ResourceClient<T> {
    if (!object.apiVersion || !object.kind) {
      throw new KubeError(`object "${object.metadata?.name ?? ''}" needs apiVersion and kind to find its resource`);
    }
    return this.resource<T>(object.apiVersion, object.kind);
  }

  /** Server-side apply of any object (its apiVersion and kind pick the resource). */
  apply<T extends KubeObject>(object: T, options: ApplyOptions): Promise<T> {
    return this.resourceFor(object).apply(object, options);
  }

  /** Resolves a kind to its resource (plural, scope, subresources). */
  resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    return this.discovery.resolve(apiVersion, kind);
  }

  /** Calls `listener` after every successful write this client makes; returns the unsubscribe function. */
  onWrite(listener: WriteListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: WriteEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  /** A raw JSON request, for endpoints without a resource handle (`/version`, `/readyz`). */
  request<T>(request: HttpRequest): Promise<T> {
    return this.transport.json<T>(request);
  }

  /** Closes the connection pool. */
  close(): Promise<void> {
    return this.transport.close();
  }
}
