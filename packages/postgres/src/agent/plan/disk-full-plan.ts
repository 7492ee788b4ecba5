/**
 * Whether the instance's data volume is full, from what postgres said and what the filesystem
 * says. Pure.
 *
 * Why both: postgres says it first (`could not extend file …: No space left on device` fails a
 * write; `PANIC: could not write to file "pg_wal/…"` stops the server, whose crash recovery then
 * fails the same way), but an aborted transaction frees its new blocks again, so free space alone
 * flickers. The filesystem covers a volume that is full while postgres is down (or nothing wrote).
 */

/**
 * Less than 16 MiB free: postgres cannot start its next WAL segment (4 MiB in clusters Kanri
 * created, 16 MiB by default elsewhere, such as a restored or upgraded older cluster).
 */
export const MIN_FREE_BYTES = 16 * 2 ** 20;
/** A "No space left on device" from postgres counts this long. */
export const NO_SPACE_HOLD_MS = 60_000;

export interface DiskInput {
  /** Bytes available to unprivileged users; undefined when the volume could not be read. */
  readonly freeBytes: number | undefined;
  readonly totalBytes: number | undefined;
  /** postgres's last line saying so, and how long ago it was logged. */
  readonly lastNoSpace?: { readonly line: string; readonly agoMs: number };
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/**
 * Why the data volume counts as full, or undefined when it does not.
 *
 * @example
 * ```ts
 * planDiskFull({ freeBytes: 200_000, totalBytes: 128 * 2 ** 20 });
 * // 'the data volume is full: 0.2 MiB free of 128.0 MiB'
 * ```
 */
export function planDiskFull(input: DiskInput): string | undefined {
  const reasons: string[] = [];
  if (input.freeBytes !== undefined && input.freeBytes < MIN_FREE_BYTES)
    reasons.push(`${mib(input.freeBytes)} free${input.totalBytes !== undefined ? ` of ${mib(input.totalBytes)}` : ''}`);
  if (input.lastNoSpace && input.lastNoSpace.agoMs < NO_SPACE_HOLD_MS)
    reasons.push(`postgres: ${input.lastNoSpace.line.replace(/^.*?\b(ERROR|FATAL|PANIC):\s*/, '$1: ').slice(0, 200)}`);
  return reasons.length > 0 ? `the data volume is full: ${reasons.join('; ')}` : undefined;
}
