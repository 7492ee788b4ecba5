/** The HA settings the agents read live from the PostgresCluster (not from their fixed environment). Pure. */

export interface HaSpec {
  /** A replica whose received LSN is further than this behind the primary's last known LSN is never promoted. */
  readonly maximumLagBytes: number;
  /** N standbys acknowledge every commit; 0: asynchronous. */
  readonly synchronousNumber: number;
}

export const DEFAULT_MAXIMUM_LAG = 16 * 1024 * 1024;

/**
 * @example
 * ```ts
 * readHaSpec({ ha: { synchronous: { number: 1 } } }); // { maximumLagBytes: 16777216, synchronousNumber: 1 }
 * ```
 */
export function readHaSpec(spec: unknown): HaSpec {
  const ha = (spec as { ha?: Record<string, unknown> } | undefined)?.ha ?? {};
  const lag = ha.maximumLagOnFailover;
  const synchronous = ha.synchronous as { number?: unknown } | undefined;
  let number = 0;
  if (synchronous && typeof synchronous === 'object') {
    number = typeof synchronous.number === 'number' && synchronous.number >= 1 ? Math.floor(synchronous.number) : 1;
  } else if (ha.synchronousMode === true) {
    // The earlier boolean form: one synchronous standby.
    number = 1;
  }
  return {
    maximumLagBytes: typeof lag === 'number' && lag >= 0 ? lag : DEFAULT_MAXIMUM_LAG,
    synchronousNumber: number,
  };
}

/** The Pods named in a comma-separated annotation value. */
export function parseMembers(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
