import type { PostgresClusterSpec } from '../../api/postgres-cluster.js';

/** The HA section with defaults filled in (the API server defaults it too; this covers old objects). */
export function haSettings(spec: PostgresClusterSpec) {
  return {
    leaseDurationSeconds: spec.ha?.leaseDurationSeconds ?? 15,
    renewDeadlineSeconds: spec.ha?.renewDeadlineSeconds ?? 10,
    retryPeriodSeconds: spec.ha?.retryPeriodSeconds ?? 2,
    maximumLagOnFailover: spec.ha?.maximumLagOnFailover ?? 16 * 1024 * 1024,
    /** Replicas that must have a commit before it is acknowledged; 0 = asynchronous. */
    synchronousNumber: spec.ha?.synchronous ? (spec.ha.synchronous.number ?? 1) : 0,
  };
}
