/**
 * Predicates decide which changes wake a controller. They see every add, update and delete;
 * returning false drops the event (the periodic resync still visits the object).
 */
import type { Delta } from '@kanri/cache';
import type { KubeObject } from '@kanri/client';

export type Predicate = (delta: Delta<KubeObject>) => boolean;

const onUpdate =
  (changed: (old: KubeObject, object: KubeObject) => boolean): Predicate =>
  (delta) =>
    delta.type !== 'updated' || changed(delta.old, delta.object);

const sameRecord = (
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
) => {
  const ak = Object.keys(a ?? {});
  if (ak.length !== Object.keys(b ?? {}).length) return false;
  return ak.every((k) => a?.[k] === b?.[k]);
};

/**
 * Updates pass only when `metadata.generation` changed (a spec change), so status writes do not
 * wake the controller again. Also lets through the start of a deletion, so finalizers run.
 */
export const generationChanged = (): Predicate =>
  onUpdate(
    (old, object) =>
      old.metadata?.generation !== object.metadata?.generation ||
      (!old.metadata?.deletionTimestamp && Boolean(object.metadata?.deletionTimestamp)),
  );

export const labelsChanged = (): Predicate =>
  onUpdate((old, object) => !sameRecord(old.metadata?.labels, object.metadata?.labels));

export const annotationsChanged = (): Predicate =>
  onUpdate((old, object) => !sameRecord(old.metadata?.annotations, object.metadata?.annotations));

/** Passes when any of the predicates passes. */
export const anyOf =
  (...predicates: Predicate[]): Predicate =>
  (delta) =>
    predicates.some((p) => p(delta));
