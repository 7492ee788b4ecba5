/**
 * Read-your-own-writes: after this process writes an object, cache reads return that write
 * (or hide a deleted object) until the watch has delivered it, so a reconcile never acts on a
 * state older than its own last write (the Java Operator SDK's temporary resource cache).
 *
 * An overlay entry ends when the watch delivers the written resourceVersion (events for one
 * object arrive in order, so anything after that is newer), when the watch reports the deletion,
 * or when a relist that started after the write is swapped in. Resource versions are only
 * compared for equality.
 *
 * The watch may deliver a write before the write's own response is processed. So the versions
 * the watch delivered in the last few seconds are remembered, and a write the watch has already
 * shown gets no overlay (which would otherwise never be retired and would hide later changes).
 */
import type { KubeObject } from '@kanri/client';

interface Overlay<T> {
  /** The written object, or undefined for a delete. */
  readonly object: T | undefined;
  readonly resourceVersion: string | undefined;
  /** The clock's time (performance.now() by default) when the write completed. */
  readonly writtenAt: number;
}

const DELETED = '\u0000deleted';
/** How long delivered versions are remembered: far longer than a write response can trail its watch event. */
const RECENT_MS = 10_000;

export class OwnWrites<T extends KubeObject> {
  readonly #overlays = new Map<string, Overlay<T>>();
  /** Versions the watch delivered, per key, in two generations of RECENT_MS / 2 each. */
  #recent = [new Map<string, Set<string>>(), new Map<string, Set<string>>()];
  #rotatedAt = performance.now();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  #remember(key: string, version: string): void {
    const now = this.#now();
    if (now - this.#rotatedAt > RECENT_MS / 2) {
      this.#recent = [new Map(), this.#recent[0] ?? new Map()];
      this.#rotatedAt = now;
    }
    const current = this.#recent[0] as Map<string, Set<string>>;
    let versions = current.get(key);
    if (!versions) {
      versions = new Set();
      current.set(key, versions);
    }
    versions.add(version);
  }

  #delivered(key: string, version: string): boolean {
    return this.#recent.some((generation) => generation.get(key)?.has(version));
  }

  get size(): number {
    return this.#overlays.size;
  }

  recordWrite(key: string, object: T): void {
    const resourceVersion = object.metadata?.resourceVersion;
    if (resourceVersion && this.#delivered(key, resourceVersion)) {
      // The store already holds this write (or newer), so any older overlay is stale too.
      this.#overlays.delete(key);
      return;
    }
    this.#overlays.set(key, { object, resourceVersion, writtenAt: this.#now() });
  }

  recordDelete(key: string): void {
    if (this.#delivered(key, DELETED)) {
      this.#overlays.delete(key);
      return;
    }
    this.#overlays.set(key, { object: undefined, resourceVersion: undefined, writtenAt: this.#now() });
  }

  /**
   * The watch delivered a version of `key`: drop the overlay once it has caught up with our write.
   * A deletion ends every overlay of the incarnation it deleted (same uid), not only a delete's:
   * a DELETE that removes the object at once (a Pod no node runs yet) answers with the object, so
   * the overlay it left is a write, and kept, it would show the deleted object until a relist.
   */
  observed(key: string, object: KubeObject, deleted: boolean): void {
    const version = object.metadata?.resourceVersion;
    if (deleted) this.#remember(key, DELETED);
    if (version) this.#remember(key, version);
    const overlay = this.#overlays.get(key);
    if (!overlay) return;
    const sameIncarnation =
      overlay.object !== undefined &&
      (overlay.resourceVersion === version ||
        (object.metadata?.uid !== undefined && overlay.object.metadata?.uid === object.metadata.uid));
    if (deleted ? overlay.object === undefined || sameIncarnation : overlay.resourceVersion === version) {
      this.#overlays.delete(key);
    }
  }

  /**
   * After any relist: overlays the new content already reflects (same version, or gone for a
   * delete) are retired. Without this, a write that only ever arrived through a list (never as a
   * watch event) would keep its overlay, and hide every later change of the object.
   */
  caughtUp(versionOf: (key: string) => string | undefined): void {
    for (const [key, overlay] of this.#overlays) {
      const stored = versionOf(key);
      if (overlay.object ? stored === overlay.resourceVersion : stored === undefined) this.#overlays.delete(key);
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
