/** How changes to watched objects become requests: the object itself, its controlling owner, or a mapping. Pure. */
import type { Delta } from '@kanri/cache';
import { type KubeObject, parseApiVersion } from '@kanri/client';
import type { Request } from '../reconcile.js';

export type MapFunction = (object: KubeObject) => readonly Request[];

/** The object's own key. */
export function requestForObject(object: KubeObject): Request[] {
  const { namespace, name } = object.metadata ?? {};
  return name ? [{ namespace, name }] : [];
}

/**
 * The controlling owner of a child, if it is of the owner kind (matched by group and kind, since
 * ownerReferences may name any served version). Owners live in the child's namespace.
 */
export function requestForOwner(ownerApiVersion: string, ownerKind: string): MapFunction {
  const ownerGroup = parseApiVersion(ownerApiVersion).group;
  return (object) => {
    const reference = object.metadata?.ownerReferences?.find(
      (r) => r.controller === true && r.kind === ownerKind && parseApiVersion(r.apiVersion).group === ownerGroup,
    );
    return reference ? [{ namespace: object.metadata?.namespace, name: reference.name }] : [];
  };
}

/** Requests for a delta; for updates, both the old and the new state count (a child moved between owners). */
export function requestsForDelta(delta: Delta<KubeObject>, map: MapFunction): Request[] {
  const requests = [...map(delta.object)];
  if (delta.type === 'updated') requests.push(...map(delta.old));
  return requests;
}
