/**
 * The finalizer dance in one call (kube-rs's `finalizer()`): add the finalizer on first sight,
 * and when the object is being deleted run the clean-up and remove the finalizer only after the
 * clean-up has succeeded. A clean-up that throws keeps the finalizer, so deletion waits and the
 * reconcile is retried with backoff.
 *
 * Finalizer edits are JSON patches guarded by a `test` of the resourceVersion, so a concurrent
 * change turns into a conflict (and a retry) instead of dropping another controller's finalizer.
 */
import type { KubeObject, ResourceClient } from '@kanri/client';
import { hasFinalizer } from './owner-reference.js';

export type FinalizerEvent<T> =
  | { readonly type: 'apply'; readonly object: T }
  | { readonly type: 'cleanup'; readonly object: T };

/** Runs `handler` for an `apply` or `cleanup` event, managing finalizer `name` on `object`. */
export async function finalizer<T extends KubeObject, R>(
  resource: ResourceClient<T>,
  name: string,
  object: T,
  handler: (event: FinalizerEvent<T>) => Promise<R>,
): Promise<R | undefined> {
  const meta = object.metadata ?? {};
  const finalizers = meta.finalizers ?? [];
  const guard = { op: 'test', path: '/metadata/resourceVersion', value: meta.resourceVersion };
  const target = { namespace: meta.namespace };
  if (meta.deletionTimestamp) {
    if (!hasFinalizer(object, name)) return undefined;
    const result = await handler({ type: 'cleanup', object });
    const index = finalizers.indexOf(name);
    await resource.patch(meta.name ?? '', [guard, { op: 'remove', path: `/metadata/finalizers/${index}` }], {
      ...target,
      type: 'json',
    });
    return result;
  }
  if (!hasFinalizer(object, name)) {
    const add = meta.finalizers
      ? { op: 'add', path: '/metadata/finalizers/-', value: name }
      : { op: 'add', path: '/metadata/finalizers', value: [name] };
    // The patched object is what the handler should see; the watch brings the same change to the cache.
    const patched = await resource.patch(meta.name ?? '', [guard, add], { ...target, type: 'json' });
    return handler({ type: 'apply', object: patched });
  }
  return handler({ type: 'apply', object });
}
