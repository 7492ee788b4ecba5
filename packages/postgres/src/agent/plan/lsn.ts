/** Log sequence numbers: postgres prints them as `X/Y` (two 32-bit hex halves). */

/**
 * The LSN as a byte position, or undefined for null/empty/malformed input. Exact up to 2^53 bytes
 * (8 PiB of WAL), far beyond any real cluster.
 *
 * @example
 * ```ts
 * parseLsn('0/3000060'); // 50331744
 * ```
 */
export function parseLsn(lsn: string | null | undefined): number | undefined {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(lsn ?? '');
  if (!match) return undefined;
  return Number.parseInt(match[1] as string, 16) * 2 ** 32 + Number.parseInt(match[2] as string, 16);
}

/** Bytes from `from` to `to`, never negative; 0 when either is unknown. */
export function lsnDistance(from: string | null | undefined, to: string | null | undefined): number {
  const a = parseLsn(from);
  const b = parseLsn(to);
  return a === undefined || b === undefined ? 0 : Math.max(0, b - a);
}

/** The greater of two LSNs (either may be missing). */
export function maxLsn(a: string | null | undefined, b: string | null | undefined): string | undefined {
  const x = parseLsn(a);
  const y = parseLsn(b);
  if (x === undefined) return y === undefined ? undefined : (b ?? undefined);
  if (y === undefined) return a ?? undefined;
  return y > x ? (b ?? undefined) : (a ?? undefined);
}
