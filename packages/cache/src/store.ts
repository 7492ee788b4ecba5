/**
 * The cache's object store: a map by `namespace/name` with secondary indexes.
 *
 * Guarantees: `replace()` swaps the whole content in one synchronous step, so no reader ever
 * sees half of a relist; it returns the exact add/update/delete deltas against the old content.
 * Caveats: objects are shared, not copied: treat what you read as read-only (the types say so).
 */
import type { KubeObject } from '@kanri/client';
import { objectKey } from './object-key.js';

/** Computes the values an object is indexed under. */
export type IndexFunction<T> = (object: T) => readonly string[];

/** Deeply read-only view of a cached object. */
export type ReadonlyDeep<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends object
    ? { readonly [K in keyof T]: ReadonlyDeep<T[K]> }
    : T;

export type Delta<T> =
  | { readonly type: 'added'; readonly object: T }
  | { readonly type: 'updated'; readonly object: T; readonly old: T }
  | { readonly type: 'deleted'; readonly object: T };

/** Indexes every store has: by namespace, by owner UID, and by `label=value`. */
export const builtinIndexes = {
  namespace: (o: KubeObject) => (o.metadata?.namespace ? [o.metadata.namespace] : []),
  owner: (o: KubeObject) => (o.metadata?.ownerReferences ?? []).map((r) => r.uid),
  label: (o: KubeObject) => Object.entries(o.metadata?.labels ?? {}).map(([k, v]) => `${k}=${v}`),
} satisfies Record<string, IndexFunction<KubeObject>>;

export type BuiltinIndex = keyof typeof builtinIndexes;

/** What readers of a store may do. */
export interface ReadonlyStore<T extends KubeObject> {
  get(key: string): ReadonlyDeep<T> | undefined;
  list(): ReadonlyDeep<T>[];
  byIndex(index: string, value: string): ReadonlyDeep<T>[];
  readonly size: number;
}

export class Store<T extends KubeObject> implements ReadonlyStore<T> {
  #objects = new Map<string, T>();
  #indexes = new Map<string, Map<string, Set<string>>>();
  readonly #indexers: ReadonlyMap<string, IndexFunction<T>>;

  constructor(indexers: Readonly<Record<string, IndexFunction<T>>> = {}) {
    this.#indexers = new Map(Object.entries({ ...builtinIndexes, ...indexers }) as [string, IndexFunction<T>][]);
    for (const name of this.#indexers.keys()) this.#indexes.set(name, new Map());
  }

  get size(): number {
    return this.#objects.size;
  }

  get(key: string): ReadonlyDeep<T> | undefined {
    return this.#objects.get(key) as ReadonlyDeep<T> | undefined;
  }

  list(): ReadonlyDeep<T>[] {
    return [...this.#objects.values()] as ReadonlyDeep<T>[];
  }

  keys(): IterableIterator<string> {
    return this.#objects.keys();
  }

  /** Objects whose `index` function returned `value`. Throws for an index that was not declared. */
  byIndex(index: string, value: string): ReadonlyDeep<T>[] {
    const values = this.#indexes.get(index);
    if (!values) throw new Error(`store has no index "${index}"; declare it in the informer's indexers`);
    const keys = values.get(value);
    if (!keys) return [];
    const result: ReadonlyDeep<T>[] = [];
    for (const key of keys) {
      const object = this.#objects.get(key);
      if (object) result.push(object as ReadonlyDeep<T>);
    }
    return result;
  }

  /** The values `object` would be indexed under by `index` (for objects not in the store, e.g. pending own writes). */
  indexValues(index: string, object: T): readonly string[] {
    const fn = this.#indexers.get(index);
    if (!fn) throw new Error(`store has no index "${index}"; declare it in the informer's indexers`);
    return fn(object);
  }

  #index(key: string, object: T, add: boolean): void {
    for (const [name, fn] of this.#indexers) {
      const values = this.#indexes.get(name) as Map<string, Set<string>>;
      for (const value of fn(object)) {
        let keys = values.get(value);
        if (add) {
          if (!keys) {
            keys = new Set();
            values.set(value, keys);
          }
          keys.add(key);
        } else if (keys) {
          keys.delete(key);
          if (keys.size === 0) values.delete(value);
        }
      }
    }
  }

  /** Adds or replaces one object; returns the delta, or undefined if the same version was already stored. */
  upsert(object: T): Delta<T> | undefined {
    const key = objectKey(object);
    const old = this.#objects.get(key);
    if (old && old.metadata?.resourceVersion === object.metadata?.resourceVersion) return undefined;
    if (old) this.#index(key, old, false);
    this.#objects.set(key, object);
    this.#index(key, object, true);
    return old ? { type: 'updated', object, old } : { type: 'added', object };
  }

  /** Removes one object; returns the delta with the last known state, or undefined if it was absent. */
  remove(object: T): Delta<T> | undefined {
    const key = objectKey(object);
    const old = this.#objects.get(key);
    if (!old) return undefined;
    this.#index(key, old, false);
    this.#objects.delete(key);
    return { type: 'deleted', object: old };
  }

  /** Replaces everything with `objects` at once (a relist) and returns what changed. */
  replace(objects: readonly T[]): Delta<T>[] {
    const previous = this.#objects;
    const next = new Map<string, T>();
    const deltas: Delta<T>[] = [];
    for (const object of objects) {
      const key = objectKey(object);
      next.set(key, object);
      const old = previous.get(key);
      if (!old) deltas.push({ type: 'added', object });
      else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion)
        deltas.push({ type: 'updated', object, old });
    }
    for (const [key, old] of previous) if (!next.has(key)) deltas.push({ type: 'deleted', object: old });
    // All of this runs synchronously, so no reader can observe the store between old and new content.
    const indexes = new Map<string, Map<string, Set<string>>>();
    for (const name of this.#indexers.keys()) indexes.set(name, new Map());
    this.#objects = next;
    this.#indexes = indexes;
    for (const [key, object] of next) this.#index(key, object, true);
    return deltas;
  }
}
