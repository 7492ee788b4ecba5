/** The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects. Pure. */
import type { KubeObject } from '@kanri/client';

export function objectKey(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : (name ?? '');
}

export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}
