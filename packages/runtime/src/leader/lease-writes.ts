/**
 * The Lease writes a decision outside the elector makes: a conditional take-over (failover), a
 * hand-over to a named holder (switchover), and annotations. Every write carries the version the
 * caller decided on (or re-reads and retries on a conflict, for annotations), so a decision made
 * on an old view never lands. Nobody outside this module builds a Lease spec.
 */
import { ConflictError, type KubeClient } from '@kanri/client';
import { holderSpec, type Lease, recordOf, releasedSpec } from './lease-record.js';
import type { LeaseView } from './lease-view.js';

/** Annotation values to set; null removes the key. */
export type AnnotationChanges = Readonly<Record<string, string | null>>;

/** Records why the holder last changed, so `kubectl get lease -o yaml` answers "why did it move?". */
export const TRANSITION_REASON_ANNOTATION = 'kanri.dev/transition-reason';

export interface LeaseRef {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
}

function leases(ref: LeaseRef) {
  return ref.client.resource<Lease>('coordination.k8s.io/v1', 'Lease');
}

/**
 * The Lease with annotations changed (null removes one). Pure.
 *
 * @example
 * ```ts
 * withAnnotations(lease, { 'example.com/note': 'hi', 'example.com/old': null });
 * ```
 */
export function withAnnotations(lease: Lease, changes: AnnotationChanges): Lease {
  const annotations = { ...(lease.metadata?.annotations ?? {}) };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  return { ...lease, metadata: { ...lease.metadata, annotations } };
}

export interface TakeOverOptions {
  /** The view the decision was made on: the write succeeds only if the Lease is still that version. */
  readonly observed: LeaseView;
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  /** Why: recorded on the Lease (see {@link TRANSITION_REASON_ANNOTATION}). */
  readonly reason: string;
  readonly annotations?: AnnotationChanges;
  readonly signal?: AbortSignal;
}

/**
 * Takes the Lease over from whoever held it, if it is still the version `observed` saw.
 * Resolves the written Lease, or undefined when someone else changed it first (409).
 *
 * @example
 * ```ts
 * const written = await takeOverLease(ref, { observed: follower.view, identity: 'pg-1',
 *   leaseDurationSeconds: 15, reason: 'pg-0 expired; pg-1 is the most advanced replica' });
 * if (written) follower.see(written);
 * ```
 */
export async function takeOverLease(ref: LeaseRef, options: TakeOverOptions): Promise<Lease | undefined> {
  const lease = options.observed.lease;
  if (!lease) throw new Error(`Lease ${ref.namespace}/${ref.name} does not exist: there is nothing to take over`);
  const spec = holderSpec(recordOf(lease), options.identity, options.leaseDurationSeconds, new Date());
  const next = withAnnotations(lease, { ...options.annotations, [TRANSITION_REASON_ANNOTATION]: options.reason });
  try {
    // The lease as observed carries its resourceVersion: the API server refuses the write if it moved.
    return await leases(ref).update(
      { ...next, spec: { ...lease.spec, ...spec } },
      { namespace: ref.namespace, signal: options.signal },
    );
  } catch (error) {
    if (error instanceof ConflictError) return undefined;
    throw error;
  }
}

export interface HandOverOptions {
  /** The current holder: the hand-over happens only while it still holds the Lease. */
  readonly from: string;
  readonly to: string;
  readonly reason: string;
  readonly leaseDurationSeconds?: number;
  readonly annotations?: AnnotationChanges;
  readonly signal?: AbortSignal;
}

/**
 * Hands the Lease from its holder to a named successor (a planned switchover). Resolves the
 * written Lease, or undefined when `from` no longer holds it.
 *
 * @example
 * ```ts
 * await handOverLease(ref, { from: 'pg-0', to: 'pg-1', reason: 'switchover requested' });
 * ```
 */
export async function handOverLease(ref: LeaseRef, options: HandOverOptions): Promise<Lease | undefined> {
  return editLease(ref, options.signal, (lease) => {
    const record = recordOf(lease);
    if (record.holderIdentity !== options.from) return undefined;
    const duration = options.leaseDurationSeconds ?? record.leaseDurationSeconds;
    const next = withAnnotations(lease, { ...options.annotations, [TRANSITION_REASON_ANNOTATION]: options.reason });
    return { ...next, spec: { ...lease.spec, ...holderSpec(record, options.to, duration, new Date()) } };
  });
}

export interface AnnotateOptions {
  /** Change nothing unless this identity holds the Lease. */
  readonly onlyIfHolder?: string;
  readonly signal?: AbortSignal;
}

/**
 * Sets annotations on the Lease (read, change, write with the read version; again on a conflict).
 * Resolves the written Lease, or undefined when `onlyIfHolder` does not hold it.
 *
 * @example
 * ```ts
 * await annotateLease(ref, { 'postgres.kanri.dev/sync-standbys': 'pg-1' }, { onlyIfHolder: 'pg-0' });
 * ```
 */
export async function annotateLease(
  ref: LeaseRef,
  changes: AnnotationChanges,
  options: AnnotateOptions = {},
): Promise<Lease | undefined> {
  return editLease(ref, options.signal, (lease) => {
    if (options.onlyIfHolder !== undefined && recordOf(lease).holderIdentity !== options.onlyIfHolder) return undefined;
    return withAnnotations(lease, changes);
  });
}

/** Read-modify-write with the read version as precondition; a few tries on conflicts. */
async function editLease(
  ref: LeaseRef,
  signal: AbortSignal | undefined,
  edit: (lease: Lease) => Lease | undefined,
): Promise<Lease | undefined> {
  const client = leases(ref);
  for (let attempt = 0; ; attempt++) {
    const current = await client.get(ref.name, { namespace: ref.namespace, signal });
    const next = edit(current);
    if (!next) return undefined;
    try {
      return await client.update(next, { namespace: ref.namespace, signal });
    } catch (error) {
      // A renewal between our read and our write: read again. Five conflicts in a row is contention worth reporting.
      if (!(error instanceof ConflictError) || attempt >= 4) throw error;
    }
  }
}

/**
 * Releases a Lease this identity holds, as client-go's ReleaseOnCancel does (no holder, a
 * one-second duration), writing over `own`, the Lease as its holder last wrote it. A renew cut off
 * by its deadline may still have landed, leaving `own` an old version: on a conflict it reads again
 * and releases only if it still holds the Lease. Resolves the released Lease, or undefined when
 * someone else holds it.
 *
 * @example
 * ```ts
 * await releaseLease(ref, ownLease, 'operator-7f9c', AbortSignal.timeout(10_000));
 * ```
 */
export async function releaseLease(
  ref: LeaseRef,
  own: Lease,
  identity: string,
  signal?: AbortSignal,
): Promise<Lease | undefined> {
  const client = leases(ref);
  const releaseOver = (lease: Lease) =>
    client.update(
      { ...lease, spec: { ...lease.spec, ...releasedSpec(recordOf(lease), new Date()) } },
      { namespace: ref.namespace, signal },
    );
  try {
    return await releaseOver(own);
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    const current = await client.get(ref.name, { namespace: ref.namespace, signal });
    return recordOf(current).holderIdentity === identity ? await releaseOver(current) : undefined;
  }
}
