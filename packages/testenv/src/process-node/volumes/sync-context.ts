/**
 * What each step of the local provisioner's sync (provisioning, expansion, release) needs of the
 * provisioner, so the steps can live in modules of their own while sharing one backoff, one
 * Event counter and one stop signal.
 */
import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { type Api, encode } from '../api.js';
import type { ClaimEventInput } from './claim-event.js';
import type { RetryBackoff } from './retry-backoff.js';
import type { VolumeKind } from './sized-class.js';

/** One StorageClass the provisioner serves, as the sync reads it. */
export interface ServedClass {
  readonly kind: VolumeKind;
  readonly allowVolumeExpansion: boolean;
}

/** The provisioner, as a sync step sees it. */
export interface SyncContext {
  readonly api: Api;
  /** Where the provisioner's volumes live: nothing outside it is ever deleted or grown. */
  readonly volumesDir: string;
  readonly log: (message: string) => void;
  /** PIDs in the real nodes' mount namespaces, asked anew each time (nodes come and go). */
  readonly mountNamespaces: () => readonly number[];
  /** Aborted once the provisioner stops: a step ends between volumes. */
  readonly signal: AbortSignal;
  readonly backoff: RetryBackoff;
  /** Records a failure of `key` and wakes the provisioner once it may be tried again; returns the delay. */
  readonly retryLater: (key: string) => number;
  /** Reports on the claim as an Event; never throws (a lost Event only goes to the log). */
  readonly event: (claim: PersistentVolumeClaim, input: ClaimEventInput) => Promise<void>;
}

/** An error's message, for the log and the claim's condition. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The API path of a claim. */
export const claimPath = (claim: PersistentVolumeClaim): string =>
  `/api/v1/namespaces/${encode(claim.metadata?.namespace ?? 'default')}/persistentvolumeclaims/${encode(claim.metadata?.name ?? '')}`;

/** `<namespace>/<name>` of a claim, for the log. */
export const claimName = (claim: PersistentVolumeClaim): string =>
  `${claim.metadata?.namespace}/${claim.metadata?.name}`;
