/** Owner references that make a child belong to its parent: garbage-collected with it and mapped back to it. Pure. */
import type { KubeObject } from '@kanri/client';
import type { OwnerReference } from 'kubernetes-types/meta/v1.js';

/** The controller reference to `owner`; throws naming the field if the owner lacks what a reference needs. */
export function buildControllerReference(owner: KubeObject): OwnerReference {
  const { name, uid } = owner.metadata ?? {};
  if (!owner.apiVersion || !owner.kind || !name || !uid) {
    throw new Error(
      `owner ${owner.kind ?? '?'} "${name ?? '?'}" needs apiVersion, kind, metadata.name and metadata.uid to own children`,
    );
  }
  return { apiVersion: owner.apiVersion, kind: owner.kind, name, uid, controller: true, blockOwnerDeletion: true };
}

/**
 * `child` with `owner` as its controller, in the owner's namespace unless it names its own.
 * Cluster-scoped owners cannot own namespaced children across namespaces by Kubernetes' rules;
 * that is left to the API server to refuse.
 */
export function withOwner<T extends KubeObject>(child: T, owner: KubeObject): T {
  const reference = buildControllerReference(owner);
  const others = (child.metadata?.ownerReferences ?? []).filter((r) => r.uid !== reference.uid);
  return {
    ...child,
    metadata: {
      ...child.metadata,
      namespace: child.metadata?.namespace ?? owner.metadata?.namespace,
      ownerReferences: [...others, reference],
    },
  };
}

/** True if `object` carries `name` in metadata.finalizers. */
export function hasFinalizer(object: KubeObject, name: string): boolean {
  return object.metadata?.finalizers?.includes(name) ?? false;
}
