/**
 * Follows the leader Lease (a get, then a watch from its resourceVersion; again after every end),
 * and judges its expiry as client-go does: by the local monotonic time at which this agent last saw
 * the lease record change, plus its duration. Never by the holder's renewTime against the local
 * clock, so clock skew between machines cannot make a live primary look dead.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GoneError, type KubeClient, type KubeObject, NotFoundError } from '@kanri/client';
import { createDeadline } from '@kanri/runtime';
import { Wakeup } from '@kanri/timing';
import type { Logger } from './logger.js';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export type Lease = KubeObject & { spec?: LeaseSpec };

export interface LeaseView {
  /** Undefined: not known yet, or the Lease does not exist (see `exists`). */
  readonly lease: Lease | undefined;
  readonly exists: boolean;
  /** Monotonic time the record (holder, times, duration, transitions) was last seen to change. */
  readonly observedAtMs: number;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const recordKey = (lease: Lease | undefined) => {
  const s = lease?.spec ?? {};
  return JSON.stringify([s.holderIdentity, s.leaseDurationSeconds, s.acquireTime, s.renewTime, s.leaseTransitions]);
};

/** The holder, or undefined when nobody holds the Lease. */
export function holderOf(view: LeaseView | undefined): string | undefined {
  return view?.lease?.spec?.holderIdentity || undefined;
}

/** When the holder's hold runs out on this agent's clock; at once for a released Lease. */
export function expiresAtMs(view: LeaseView): number {
  if (!holderOf(view)) return view.observedAtMs;
  return view.observedAtMs + (view.lease?.spec?.leaseDurationSeconds ?? 15) * 1000;
}

export class LeaseFollower {
  readonly #client: KubeClient;
  readonly #namespace: string;
  readonly #name: string;
  readonly #log: Logger;
  #view: LeaseView | undefined;
  /** Woken on every change of the Lease (record or annotations). */
  readonly changed = new Wakeup();

  constructor(client: KubeClient, namespace: string, name: string, log: Logger) {
    this.#client = client;
    this.#namespace = namespace;
    this.#name = name;
    this.#log = log;
  }

  get view(): LeaseView | undefined {
    return this.#view;
  }

  #leases() {
    return this.#client.resource<Lease>('coordination.k8s.io/v1', 'Lease');
  }

  /** Folds a Lease (or its absence) in; written objects are folded in by whoever wrote them. */
  see(lease: Lease | undefined): void {
    const before = this.#view;
    const prior = before?.lease?.metadata?.resourceVersion;
    const now = lease?.metadata?.resourceVersion;
    if (before && before.exists === (lease !== undefined) && prior !== undefined && now !== undefined) {
      // An older version from a slow request must not replace a newer one.
      if (Number(now) < Number(prior)) return;
    }
    const recordChanged = !before || recordKey(before.lease) !== recordKey(lease) || before.exists !== !!lease;
    this.#view = {
      lease,
      exists: lease !== undefined,
      observedAtMs: recordChanged ? performance.now() : before.observedAtMs,
    };
    if (prior !== now || recordChanged) this.changed.wake();
  }

  /** Reads the Lease now. */
  async refresh(signal?: AbortSignal): Promise<LeaseView | undefined> {
    try {
      this.see(await this.#leases().get(this.#name, { namespace: this.#namespace, signal }));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      this.see(undefined);
    }
    return this.#view;
  }

  /** Runs until `signal` aborts; never throws. */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        await this.refresh(signal);
        const resourceVersion = this.#view?.lease?.metadata?.resourceVersion;
        const timeoutSeconds = 60 + Math.floor(Math.random() * 60);
        const deadline = createDeadline((timeoutSeconds + 15) * 1000, signal);
        const watchSignal = deadline.signal;
        try {
          for await (const event of this.#leases().watch({
            namespace: this.#namespace,
            fieldSelector: `metadata.name=${this.#name}`,
            resourceVersion,
            timeoutSeconds,
            signal: watchSignal,
          })) {
            if (event.type === 'BOOKMARK') continue;
            this.see(event.type === 'DELETED' ? undefined : (event.object as Lease));
          }
        } catch (error) {
          if (signal.aborted) return;
          if (!(watchSignal.aborted || error instanceof GoneError)) throw error;
        } finally {
          deadline.dispose();
        }
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        failures++;
        const delayMs = Math.min(250 * 2 ** Math.min(failures, 6), 10_000);
        this.#log.warn({ err: error, retryInMs: delayMs }, 'cannot follow the leader Lease; retrying');
        await sleep(delayMs, undefined, { signal }).catch(() => undefined);
      }
    }
  }
}
