/**
 * The HA settings and their defaults, in one place. The API's schema defaults its fields from
 * `HA_DEFAULTS`, the operator and the agent read them through `haSettings`, and the leader Lease's
 * timings come from here on both sides, so the primary's renew deadline and the replicas' expiry
 * can never follow different rules.
 */
export const HA_DEFAULTS = {
  leaseDurationSeconds: 15,
  renewDeadlineSeconds: 10,
  retryPeriodSeconds: 2,
  /** 16 MiB: one WAL segment. */
  maximumLagOnFailover: 16 * 1024 * 1024,
  /** On, as in Patroni's failsafe_mode: an API-server outage alone stops no primary. */
  failsafeMode: true,
} as const;

/**
 * `spec.ha` as stored, each field possibly absent (an object stored before the field existed).
 * The API's schema (api/postgres-cluster.ts) produces it; it is spelled out here, not imported,
 * because the API imports this module for its defaults.
 */
export interface HaSpec {
  readonly leaseDurationSeconds?: number | undefined;
  readonly renewDeadlineSeconds?: number | undefined;
  readonly retryPeriodSeconds?: number | undefined;
  readonly maximumLagOnFailover?: number | undefined;
  readonly failsafeMode?: boolean | undefined;
  readonly synchronous?: { readonly number?: number | undefined } | undefined;
}

/** The HA section with every default filled in. */
export interface HaSettings {
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineSeconds: number;
  readonly retryPeriodSeconds: number;
  /** A replica whose received LSN is further than this behind the primary's last known LSN is never promoted. */
  readonly maximumLagOnFailover: number;
  /** Replicas that must have a commit before it is acknowledged; 0 = asynchronous. */
  readonly synchronousNumber: number;
  /**
   * While the API server cannot be reached, the primary leads on for as long as every other member
   * vouches for it over the peer API (plan/leadership/failsafe-plan.ts); off, it fences at the renew deadline.
   */
  readonly failsafeMode: boolean;
}

/**
 * The HA section with defaults filled in (the API server defaults it too; this covers objects
 * stored before a field existed).
 *
 * @example
 * ```ts
 * haSettings({ ha: { synchronous: { number: 1 } } }).synchronousNumber; // 1
 * ```
 */
export function haSettings(spec: { readonly ha?: HaSpec | undefined } | undefined): HaSettings {
  const ha = spec?.ha;
  return {
    leaseDurationSeconds: ha?.leaseDurationSeconds ?? HA_DEFAULTS.leaseDurationSeconds,
    renewDeadlineSeconds: ha?.renewDeadlineSeconds ?? HA_DEFAULTS.renewDeadlineSeconds,
    retryPeriodSeconds: ha?.retryPeriodSeconds ?? HA_DEFAULTS.retryPeriodSeconds,
    maximumLagOnFailover: ha?.maximumLagOnFailover ?? HA_DEFAULTS.maximumLagOnFailover,
    synchronousNumber: ha?.synchronous ? (ha.synchronous.number ?? 1) : 0,
    failsafeMode: ha?.failsafeMode ?? HA_DEFAULTS.failsafeMode,
  };
}

/**
 * The Pods named in a comma-separated annotation value (the Lease's synchronous standbys).
 *
 * @example
 * ```ts
 * parseMembers('pg-1, pg-2'); // ['pg-1', 'pg-2']
 * ```
 */
export function parseMembers(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
