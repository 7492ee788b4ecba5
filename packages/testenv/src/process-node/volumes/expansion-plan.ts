/**
 * Whether a bound claim of the local provisioner needs its volume expanded, as the external-resizer
 * decides it for a CSI volume: the claim asks for more than its PersistentVolume holds. Pure.
 */
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { VolumeKind } from './sized-class.js';
import { quantityBytes, volumeCapacity } from './volume-size.js';

/** The PersistentVolumeClaim conditions a resize sets and a finished one clears (as the external-resizer). */
export const RESIZE_CONDITIONS: readonly string[] = [
  'Resizing',
  'FileSystemResizePending',
  'ControllerResizeError',
  'NodeResizeError',
];

/**
 * What to do for one claim: nothing; grow its volume from `from` to `to` (the capacity the
 * volume records; `toBytes` its size) for the claim's `request`; or only record on the claim a
 * resize whose volume already has `capacity` (one that stopped after the volume grew).
 */
export type ExpansionStep =
  | { readonly kind: 'none' }
  | {
      readonly kind: 'expand';
      readonly from: string;
      readonly to: string;
      readonly toBytes: bigint;
      readonly request: string;
    }
  | { readonly kind: 'finish'; readonly capacity: string };

export interface ExpansionInput {
  readonly claim: PersistentVolumeClaim;
  readonly volume: PersistentVolume;
  readonly kind: VolumeKind;
  /** The claim's StorageClass's `allowVolumeExpansion`. */
  readonly allowVolumeExpansion: boolean;
}

const NONE: ExpansionStep = { kind: 'none' };

/**
 * The next expansion step of a claim bound to a volume of this provisioner. A claim that asks for
 * less than its volume holds needs nothing (Kubernetes refuses a shrink below the status capacity).
 *
 * @example
 * ```ts
 * planExpansion({ claim, volume, kind: 'loop', allowVolumeExpansion: true });
 * // { kind: 'expand', from: '64Mi', to: '128Mi', toBytes: 134217728n, request: '128Mi' }
 * ```
 */
export function planExpansion(input: ExpansionInput): ExpansionStep {
  const { claim, volume } = input;
  if (claim.metadata?.deletionTimestamp || claim.status?.phase !== 'Bound') return NONE;
  if (volume.status?.phase !== undefined && volume.status.phase !== 'Bound') return NONE;
  if (!claim.metadata?.uid || volume.spec?.claimRef?.uid !== claim.metadata.uid) return NONE;
  if (claim.spec?.volumeName !== volume.metadata?.name) return NONE;
  const request = claim.spec?.resources?.requests?.storage;
  const from = volume.spec?.capacity?.storage;
  const requested = quantityBytes(request);
  const held = quantityBytes(from);
  if (request === undefined || from === undefined || requested === undefined || held === undefined) return NONE;
  if (requested > held) {
    if (!input.allowVolumeExpansion) return NONE;
    const to = volumeCapacity(input.kind, request);
    const toBytes = quantityBytes(to);
    if (to === undefined || toBytes === undefined) return NONE;
    return { kind: 'expand', from, to, toBytes, request };
  }
  const recorded = quantityBytes(claim.status?.capacity?.storage);
  const unfinished =
    claim.status?.allocatedResourceStatuses?.storage !== undefined ||
    (claim.status?.conditions ?? []).some((c) => RESIZE_CONDITIONS.includes(c.type));
  if ((recorded !== undefined && recorded < held) || unfinished) return { kind: 'finish', capacity: from };
  return NONE;
}
