/** Transforms applied to every object before it is stored; the default drops managedFields, often half an object's size. */
import type { KubeObject } from '@kanri/client';

export type Transform<T extends KubeObject> = (object: T) => T;

/** Removes `metadata.managedFields` in place. */
export function stripManagedFields<T extends KubeObject>(object: T): T {
  if (object.metadata?.managedFields) delete object.metadata.managedFields;
  return object;
}
