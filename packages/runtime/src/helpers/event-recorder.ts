/**
 * Kubernetes Events (events.k8s.io/v1) that explain what a controller did, aggregated and
 * rate-limited the way client-go's recorder is: a repeat of the same event on the same object
 * within 6 minutes bumps the existing Event's `series` instead of creating another, and each
 * object gets a burst of 25 events, then one per 5 minutes. Recording is best-effort: a failure
 * is logged, never thrown into the reconcile.
 */
import { randomBytes } from 'node:crypto';
import { formatMicroTime, type KubeClient, type KubeObject } from '@kanri/client';
import type { Logger } from 'pino';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly client: KubeClient;
  /** `reportingController`, e.g. `kanri.dev/postgres-operator`. */
  readonly controller: string;
  /** `reportingInstance`, e.g. the pod name. */
  readonly instance: string;
  readonly logger?: Logger;
  readonly now?: () => number;
}

const SERIES_WINDOW_MS = 6 * 60_000;
const BURST = 25;
const REFILL_MS = 5 * 60_000;

interface Recorded {
  name: string;
  namespace: string;
  count: number;
  firstAt: number;
}

export class EventRecorder {
  readonly #options: EventRecorderOptions;
  readonly #recent = new Map<string, Recorded>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #now: () => number;

  constructor(options: EventRecorderOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  #allow(uid: string): boolean {
    const now = this.#now();
    const bucket = this.#buckets.get(uid) ?? { tokens: BURST, at: now };
    bucket.tokens = Math.min(BURST, bucket.tokens + (now - bucket.at) / REFILL_MS);
    bucket.at = now;
    this.#buckets.set(uid, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /**
   * Records an event about `regarding`.
   *
   * @example
   * ```ts
   * await recorder.record(cluster, 'Warning', 'FailoverWaiting', 'no replica within lag limit');
   * ```
   */
  async record(regarding: KubeObject, type: EventType, reason: string, note: string, action = reason): Promise<void> {
    const meta = regarding.metadata ?? {};
    const uid = meta.uid ?? `${meta.namespace}/${meta.name}`;
    const key = [uid, type, reason, action, note].join('\u0000');
    const now = this.#now();
    const events = this.#options.client.resource<KubeObject>('events.k8s.io/v1', 'Event');
    try {
      const previous = this.#recent.get(key);
      if (previous && now - previous.firstAt < SERIES_WINDOW_MS) {
        previous.count++;
        await events.patch(
          previous.name,
          { series: { count: previous.count, lastObservedTime: formatMicroTime(new Date(now)) } },
          { namespace: previous.namespace },
        );
        return;
      }
      if (!this.#allow(uid)) return;
      const namespace = meta.namespace || 'default';
      const name = `${meta.name}.${randomBytes(8).toString('hex')}`;
      await events.create({
        metadata: { name, namespace },
        eventTime: formatMicroTime(new Date(now)),
        reportingController: this.#options.controller,
        reportingInstance: this.#options.instance,
        action,
        reason,
        note: note.slice(0, 1024),
        type,
        regarding: {
          apiVersion: regarding.apiVersion,
          kind: regarding.kind,
          name: meta.name,
          namespace: meta.namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
      } as KubeObject);
      this.#recent.set(key, { name, namespace, count: 1, firstAt: now });
      for (const [k, r] of this.#recent) if (now - r.firstAt >= SERIES_WINDOW_MS) this.#recent.delete(k);
    } catch (error) {
      this.#options.logger?.warn(
        { err: error, reason, object: `${meta.namespace}/${meta.name}` },
        'could not record event',
      );
    }
  }
}
