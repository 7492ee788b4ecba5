/**
 * Every version of one Lease, in the order the API server stored them, as the test's own watch
 * sees them: so leader-election tests can assert what happened in which order (released, then
 * taken; renewed last at T, taken no earlier than T + lease) instead of how fast it happened.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '@kanri/client';

export interface LeaseVersion {
  /** `''` when the Lease is released. */
  readonly holder: string;
  /** When the holder last renewed it, in epoch ms (the holder's clock: in these tests, this machine's). */
  readonly renewedAtEpochMs: number | undefined;
  /** When the holder took it, in epoch ms, stamped before its write was sent. */
  readonly acquiredAtEpochMs: number | undefined;
  readonly leaseDurationMs: number;
  readonly transitions: number;
}

export class LeaseHistory {
  readonly versions: LeaseVersion[] = [];
  readonly #stop = new AbortController();
  #watching: Promise<void> = Promise.resolve();
  #failure: unknown;

  private constructor() {}

  /** Starts recording from the Lease as it is now (it must exist). */
  static async start(client: KubeClient, namespace: string, name: string): Promise<LeaseHistory> {
    const history = new LeaseHistory();
    const leases = client.resource('coordination.k8s.io/v1', 'Lease');
    const current = await leases.get(name, { namespace });
    history.#record(current);
    // From the version just read: the watch replays every later one, however late it connects.
    const events = leases.watch({
      namespace,
      fieldSelector: `metadata.name=${name}`,
      resourceVersion: current.metadata?.resourceVersion,
      allowWatchBookmarks: false,
      signal: history.#stop.signal,
    });
    history.#watching = (async () => {
      try {
        for await (const event of events) if (event.type !== 'DELETED') history.#record(event.object);
      } catch (error) {
        if (!history.#stop.signal.aborted) history.#failure = error;
      }
    })();
    return history;
  }

  #record(lease: {
    spec?: {
      holderIdentity?: string;
      renewTime?: string;
      acquireTime?: string;
      leaseDurationSeconds?: number;
      leaseTransitions?: number;
    };
  }): void {
    const spec = lease.spec ?? {};
    this.versions.push({
      holder: spec.holderIdentity ?? '',
      renewedAtEpochMs: spec.renewTime ? Date.parse(spec.renewTime) : undefined,
      acquiredAtEpochMs: spec.acquireTime ? Date.parse(spec.acquireTime) : undefined,
      leaseDurationMs: (spec.leaseDurationSeconds ?? 0) * 1_000,
      transitions: spec.leaseTransitions ?? 0,
    });
  }

  /** The holders in order, each run of versions with the same holder shown once. */
  holders(): string[] {
    const holders: string[] = [];
    for (const { holder } of this.versions) if (holders.at(-1) !== holder) holders.push(holder);
    return holders;
  }

  /** The last version `identity` wrote while holding the Lease. */
  lastHeldBy(identity: string): LeaseVersion | undefined {
    return this.versions.findLast((v) => v.holder === identity);
  }

  /**
   * Waits until the watch has shown `identity` holding the Lease: the watch trails the writes (a
   * candidate may see its own write succeed before our watch delivers it). Throws if the watch
   * failed, since then the history may have gaps.
   */
  async reach(identity: string, timeoutMs = 30_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.versions.at(-1)?.holder !== identity) {
      if (this.#failure) throw new Error('the Lease watch failed; the history may have gaps', { cause: this.#failure });
      if (performance.now() > deadline)
        throw new Error(`the Lease watch never showed ${identity} holding it: ${this.holders().join(' → ')}`);
      await sleep(20);
    }
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#watching;
  }
}
