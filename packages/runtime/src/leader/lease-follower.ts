/**
 * Follows one Lease through the cache's informer (list + watch by name, bookmarks, relist on 410,
 * backoff), folding every version into a {@link LeaseView}. Followers judge expiry as client-go
 * does: from the local monotonic time at which they last saw the record change, never from the
 * holder's renewTime against the local clock, so clock skew cannot make a live holder look dead.
 *
 * Guarantees: `view` only moves forward (an older version never replaces a newer one); `changed`
 * is woken on every change of the record or the annotations, including writes folded in with
 * `see`. Caveat: `changed` has one waiter at a time; other readers subscribe with `onChange`.
 */

import { Informer } from '@kanri/cache';
import { type KubeClient, NotFoundError } from '@kanri/client';
import { Wakeup } from '@kanri/timing';
import type { Lease } from './lease-record.js';
import { foldLease, type LeaseView } from './lease-view.js';

export interface LeaseFollowerOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
  /** Called for every failure the watch recovers from. */
  readonly onError?: (error: unknown, retryInMs: number) => void;
}

/**
 * @example
 * ```ts
 * const follower = new LeaseFollower({ client, namespace: 'db', name: 'pg-leader' }).start();
 * await follower.waitForSync(signal);
 * while (!signal.aborted) {
 *   console.log('holder:', holderOf(follower.view));
 *   await follower.changed.wait(2_000, signal);
 * }
 * await follower.stop();
 * ```
 */
export class LeaseFollower {
  readonly #options: LeaseFollowerOptions;
  readonly #informer: Informer<Lease>;
  readonly #handlers = new Set<(view: LeaseView) => void>();
  #view: LeaseView | undefined;
  /** Woken on every change of the Lease (record or annotations). */
  readonly changed = new Wakeup();

  constructor(options: LeaseFollowerOptions) {
    this.#options = options;
    this.#informer = new Informer(options.client.resource('coordination.k8s.io/v1', 'Lease'), {
      namespace: options.namespace,
      fieldSelector: `metadata.name=${options.name}`,
      ...(options.onError ? { onError: options.onError } : {}),
    });
    this.#informer.onChange((delta) => {
      this.see(delta.type === 'deleted' ? undefined : (delta.object as Lease));
    });
  }

  /** The Lease as last seen; undefined until the first list (or read) is in. */
  get view(): LeaseView | undefined {
    return this.#view;
  }

  /** Starts following in the background. Idempotent. */
  start(): this {
    this.#informer.start();
    void this.#informer.waitForSync().then(() => {
      // An empty first list is news too: the Lease does not exist.
      if (this.#informer.size === 0) this.see(undefined);
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.#informer.stop();
  }

  /** Resolves once the first list is in (rejects if `signal` aborts first). */
  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.#informer.waitForSync(signal);
  }

  /** Subscribes to every new view; returns the unsubscribe function. */
  onChange(handler: (view: LeaseView) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Folds a Lease (or its absence) in: a fresh read, or a write of this process's own. */
  see(lease: Lease | undefined): LeaseView {
    const before = this.#view;
    const after = foldLease(before, lease, performance.now());
    this.#view = after;
    const news =
      before === undefined ||
      before.exists !== after.exists ||
      before.lease?.metadata?.resourceVersion !== after.lease?.metadata?.resourceVersion;
    if (news) {
      this.changed.wake();
      for (const handler of this.#handlers) handler(after);
    }
    return after;
  }

  /** Reads the Lease from the API server now (a quorum read), and folds it in. */
  async refresh(signal?: AbortSignal): Promise<LeaseView> {
    const { client, namespace, name } = this.#options;
    try {
      return this.see(await client.resource('coordination.k8s.io/v1', 'Lease').get(name, { namespace, signal }));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      return this.see(undefined);
    }
  }
}
