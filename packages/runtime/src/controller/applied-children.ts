/**
 * What a controller last applied to each child, and the resourceVersion the API server answered.
 * A reconcile that wants the same child again, while the cache still holds that very version,
 * would send an apply the server turns into a no-op: skipping it saves the request and the
 * server's merge work, which an operator woken by every status change of its Pods otherwise pays
 * for each child on every reconcile. Any change by anyone bumps the resourceVersion, so drift is
 * still put back at the next reconcile. Pure: no I/O.
 */
import type { KubeObject } from '@kanri/client';

/** Entries kept; the least recently used go first (children deleted long ago). */
const DEFAULT_CAPACITY = 10_000;

interface Applied {
  readonly intent: string;
  readonly resourceVersion: string;
}

export class AppliedChildren {
  readonly #entries = new Map<string, Applied>();
  readonly #capacity: number;

  constructor(capacity = DEFAULT_CAPACITY) {
    this.#capacity = capacity;
  }

  /** True when `child` is what was last applied and `live` (the cached copy) is the version that apply produced. */
  unchanged(child: KubeObject, live: KubeObject | undefined): boolean {
    const key = keyOfChild(child);
    const entry = key === undefined ? undefined : this.#entries.get(key);
    if (!entry || key === undefined) return false;
    const version = live?.metadata?.resourceVersion;
    if (version === undefined || version !== entry.resourceVersion || entry.intent !== JSON.stringify(child)) {
      return false;
    }
    // Recently used: moved to the back of the eviction order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return true;
  }

  /** Records that `child` was applied and the server answered with `result`. */
  applied(child: KubeObject, result: KubeObject): void {
    const key = keyOfChild(child);
    const resourceVersion = result.metadata?.resourceVersion;
    if (key === undefined) return;
    this.#entries.delete(key);
    if (resourceVersion === undefined) return;
    this.#entries.set(key, { intent: JSON.stringify(child), resourceVersion });
    if (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}

function keyOfChild(child: KubeObject): string | undefined {
  const name = child.metadata?.name;
  if (!child.apiVersion || !child.kind || !name) return undefined;
  return `${child.apiVersion}/${child.kind}/${child.metadata?.namespace ?? ''}/${name}`;
}
