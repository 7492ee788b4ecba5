/**
 * Read-your-own-writes: after this process writes an object, cache reads return that write
 * (or hide a deleted object) until the watch has delivered it, so a reconcile never acts on a
 * state older than its own last write (the Java Operator SDK's temporary resource cache).
 *
 * An overlay entry ends when the watch delivers the written resourceVersion (events for one
 * object arrive in order, so anything after that is newer), when the watch reports the deletion,
 * or when a relist that started after the write is swapped in. Resource versions are only
 * compared for equality.
 */
import type { KubeObject } from '@kanri/client';

interface Overlay<T> {
  /** The written object, or undefined for a delete. */
  readonly object: T | undefined;
  readonly resourceVersion: string | undefined;
  /** performance.now() when the write completed. */
  readonly writtenAt: number;
}

export class OwnWrites<T extends KubeObject> {
  readonly #overlays = new Map<string, Overlay<T>>();

  get size(): number {
    return this.#overlays.size;
  }

  recordWrite(key: string, object: T): void {
    this.#overlays.set(key, {
      object,
      resourceVersion: object.metadata?.resourceVersion,
      writtenAt: performance.now(),
    });
  }

  recordDelete(key: string): void {
    this.#overlays.set(key, { object: undefined, resourceVersion: undefined, writtenAt: performance.now() });
  }

  /** The watch delivered a version of `key`: drop the overlay once it has caught up with our write. */
  observed(key: string, object: KubeObject, deleted: boolean): void {
    const overlay = this.#overlays.get(key);
    if (!overlay) return;
    if (deleted ? overlay.object === undefined : overlay.resourceVersion === object.metadata?.resourceVersion) {
      this.#overlays.delete(key);
    }
  }

  /** A relist begun at `listStartedAt` saw every write completed before then. */
  relisted(listStartedAt: number): void {
    for (const [key, overlay] of this.#overlays) if (overlay.writtenAt < listStartedAt) this.#overlays.delete(key);
  }

  /** `undefined`: no overlay, read the store. `{ object: undefined }`: deleted by us. */
  lookup(key: string): { readonly object: T | undefined } | undefined {
    return this.#overlays.get(key);
  }

  entries(): IterableIterator<[string, Overlay<T>]> {
    return this.#overlays.entries();
  }
}
