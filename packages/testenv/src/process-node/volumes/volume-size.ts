/**
 * Sizes of sized volumes: a claim's request rounded up to whole MiB, never below a floor that
 * ext4 with a journal still fits in with room for data. Pure.
 */
import { quantityNanos } from '@kanri/timing';
import type { VolumeKind } from './sized-class.js';

/** The smallest sized volume, in MiB: below it, mkfs.ext4's journal and tables leave little room. */
export const MIN_SIZED_VOLUME_MIB = 16;

const MIB = 1n << 20n;
const NANOS_PER_BYTE = 1_000_000_000n;

/**
 * A storage quantity in bytes, rounded up (`resource.Quantity.Value()`); undefined when `text` is
 * not a quantity or is negative.
 *
 * @example
 * ```ts
 * quantityBytes('1.5Ki'); // 1536n
 * quantityBytes('1k'); // 1000n
 * ```
 */
export function quantityBytes(text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined;
  const nanos = quantityNanos(text);
  if (nanos === undefined || nanos < 0n) return undefined;
  return (nanos + NANOS_PER_BYTE - 1n) / NANOS_PER_BYTE;
}

/** How big a sized volume is made, or why it is not. */
export type SizedVolumePlan = { readonly mib: number } | { readonly refused: string };

/**
 * The size of a sized volume for a request: whole MiB, rounded up; refused below
 * {@link MIN_SIZED_VOLUME_MIB} or without a request.
 *
 * @example
 * ```ts
 * planSizedVolume('100M'); // { mib: 96 } (100,000,000 bytes are 95.4 MiB)
 * planSizedVolume('8Mi'); // { refused: 'requests 8Mi (8 MiB); a sized volume needs at least 16 MiB' }
 * ```
 */
export function planSizedVolume(request: string | undefined): SizedVolumePlan {
  const bytes = quantityBytes(request);
  if (request === undefined || bytes === undefined) {
    return { refused: `requests no valid storage size (${request ?? 'none'}); a sized volume needs one` };
  }
  const mib = (bytes + MIB - 1n) / MIB;
  if (mib < BigInt(MIN_SIZED_VOLUME_MIB)) {
    return { refused: `requests ${request} (${mib} MiB); a sized volume needs at least ${MIN_SIZED_VOLUME_MIB} MiB` };
  }
  return { mib: Number(mib) };
}

/**
 * The capacity a volume of `kind` records for `request`: a directory has no size of its own, so
 * it records the request as written; a sized volume its real size, as a CSI driver reports the
 * size it made (at least the request).
 *
 * @example
 * ```ts
 * volumeCapacity('loop', '100M'); // '96Mi'
 * volumeCapacity('directory', '100M'); // '100M'
 * ```
 */
export function volumeCapacity(kind: VolumeKind, request: string): string | undefined {
  if (kind === 'directory') return request;
  const plan = planSizedVolume(request);
  return 'mib' in plan ? `${plan.mib}Mi` : undefined;
}
