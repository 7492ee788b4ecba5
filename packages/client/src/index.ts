/**
 * @kanri/client: a thin, lossless Kubernetes client over Node's own http/https.
 *
 * @example
 * ```ts
 * import { ignoreNotFound, isNotFound, KubeClient } from '@kanri/client';
 *
 * const client = await KubeClient.load();
 * try {
 *   await client.resource('v1', 'Secret').get('missing', { namespace: 'default' });
 * } catch (error) {
 *   if (!isNotFound(error)) throw error;
 * }
 * await ignoreNotFound(client.resource('v1', 'Pod').delete('gone', { namespace: 'default' }));
 * ```
 */

export { formatMicroTime } from '@kanri/timing';
export type { CredentialSource, Credentials } from './config/credentials.js';
export { KubeconfigError } from './config/kubeconfig-error.js';
export type { KubeconfigFile } from './config/kubeconfig-file.js';
export { mergeKubeconfigs } from './config/kubeconfig-file.js';
export type { ClusterConnection, LoadKubeconfigOptions, TlsSettings } from './config/load-kubeconfig.js';
export { loadKubeconfig, resolveContext } from './config/load-kubeconfig.js';
export { Discovery, UnknownKindError } from './discovery.js';
export { ignoreNotFound, isAlreadyExists, isConflict, isNotFound } from './error-predicates.js';
export * from './errors.js';
export type { KubeClientOptions, WriteListener } from './kube-client.js';
export { KubeClient } from './kube-client.js';
export type {
  ApplyOptions,
  DeleteOptions,
  LabelSelector,
  ListOptions,
  PatchOptions,
  PatchType,
  ReadOptions,
  WatchOptions,
  WriteEvent,
  WriteOptions,
} from './resource-client.js';
export { formatLabelSelector, ResourceClient } from './resource-client.js';
export type { ResourceInfo } from './resource-info.js';
export { parseApiVersion, qualifiedResource, resourcePath } from './resource-info.js';
export type { HttpMethod, HttpRequest, TransportOptions } from './transport/http-transport.js';
export { HttpTransport } from './transport/http-transport.js';
export type {
  GroupVersionKind,
  KnownKinds,
  KubeList,
  KubeObject,
  ListMeta,
  ObjectMeta,
  ObjectOf,
  WatchEvent,
  WatchEventType,
} from './types.js';
