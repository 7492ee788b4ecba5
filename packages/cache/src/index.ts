/**
 * @kanri/cache: a Kubernetes watch cache that never goes stale.
 *
 * @example
 * ```ts
 * import { KubeClient } from '@kanri/client';
 * import { Informer } from '@kanri/cache';
 *
 * const client = await KubeClient.load();
 * const pods = new Informer(client.resource('v1', 'Pod'), { namespace: 'default', client }).start();
 * await pods.waitForSync();
 * pods.onChange((delta) => console.log(delta.type, delta.object.metadata?.name));
 * console.log(pods.byIndex('label', 'app=web').length, pods.status);
 * ```
 */

export type { BackoffOptions } from '@kanri/timing';
export { Backoff } from '@kanri/timing';
export type { DeltaHandler, InformerOptions, InformerStatus } from './informer.js';
export { Informer } from './informer.js';
export { keyOf, objectKey } from './object-key.js';
export type { BuiltinIndex, Delta, IndexFunction, ReadonlyDeep, ReadonlyStore } from './store.js';
export { builtinIndexes, Store } from './store.js';
export type { Transform } from './transforms.js';
export { stripManagedFields } from './transforms.js';
export type { ObjectWatch, WatchObjectLog, WatchObjectOptions } from './watch-object.js';
export { watchObject } from './watch-object.js';
export type { WatcherEvent, WatcherOptions } from './watcher.js';
export { watcher } from './watcher.js';
