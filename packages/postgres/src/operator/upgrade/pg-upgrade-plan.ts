/**
 * What a PGUpgrade asks of its cluster, and its conditions, as PGO names them. Pure.
 *
 * The cluster must carry the annotation `postgres.kanri.dev/allow-upgrade` (or PGO's
 * `postgres-operator.crunchydata.com/allow-upgrade`) naming the PGUpgrade, as in PGO: the
 * annotation ties one upgrade to one cluster, and shows that whoever asked may change the cluster.
 * Then the PGUpgrade raises `spec.postgresVersion` with the allow-major-upgrade annotation, once,
 * and mirrors `status.majorUpgrade` into its conditions.
 *
 * Unlike PGO, the cluster is not shut down first: Kanri checks the upgrade against the running
 * server, then stops the instances itself.
 */
import type { MajorUpgradeStatus } from '../../api/major-upgrade-status.js';

export interface PgUpgradeInput {
  readonly name: string;
  readonly spec: {
    readonly postgresClusterName: string;
    readonly fromPostgresVersion: number;
    readonly toPostgresVersion: number;
    readonly toPostgresImage?: string | undefined;
  };
  readonly cluster:
    | {
        readonly allowedUpgrade: string | undefined;
        readonly shutdown: boolean;
        /** The major the cluster runs (status.postgresVersion). */
        readonly running: number | undefined;
        readonly majorUpgrade: MajorUpgradeStatus | undefined;
      }
    | undefined;
}

export interface PgUpgradeCondition {
  readonly type: 'Progressing' | 'Succeeded';
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}

export interface PgUpgradePlan {
  readonly conditions: readonly PgUpgradeCondition[];
  /** Ask the cluster for the upgrade: raise spec.postgresVersion (and spec.image) with the annotation. */
  readonly request?: { readonly postgresVersion: number; readonly image?: string };
  /** The upgrade is over either way: nothing more will change by itself. */
  readonly finished: boolean;
}

const progressing = (status: 'True' | 'False', reason: string, message: string): PgUpgradeCondition => ({
  type: 'Progressing',
  status,
  reason,
  message,
});

/**
 * @example
 * ```ts
 * planPgUpgrade({ name: 'up', spec: { postgresClusterName: 'hippo', fromPostgresVersion: 15, toPostgresVersion: 16 },
 *   cluster: { allowedUpgrade: undefined, shutdown: false, running: 15, majorUpgrade: undefined } });
 * // Progressing False, PGClusterMissingRequiredAnnotation: 'PostgresCluster hippo lacks annotation for upgrade up'
 * ```
 */
export function planPgUpgrade(input: PgUpgradeInput): PgUpgradePlan {
  const { spec, cluster, name } = input;
  const clusterName = spec.postgresClusterName;
  const waiting = (reason: string, message: string): PgUpgradePlan => ({
    conditions: [progressing('False', reason, message)],
    finished: false,
  });
  if (!cluster) return waiting('PGClusterNotFound', `PostgresCluster ${clusterName} does not exist`);
  if (cluster.allowedUpgrade !== name)
    return waiting(
      'PGClusterMissingRequiredAnnotation',
      `PostgresCluster ${clusterName} lacks annotation for upgrade ${name}`,
    );
  const mu = cluster.majorUpgrade;
  if (mu && mu.from === spec.fromPostgresVersion && mu.to === spec.toPostgresVersion) {
    const detail = `${mu.phase}: ${mu.message}`;
    switch (mu.phase) {
      case 'Succeeded':
        return {
          conditions: [
            progressing('False', 'PGUpgradeCompleted', detail),
            { type: 'Succeeded', status: 'True', reason: 'PGUpgradeSucceeded', message: mu.message },
          ],
          finished: true,
        };
      case 'Failed':
      case 'RolledBack':
        return {
          conditions: [
            progressing('False', mu.phase === 'Failed' ? 'PGUpgradeFailed' : 'PGUpgradeRolledBack', detail),
            { type: 'Succeeded', status: 'False', reason: 'PGUpgradeFailed', message: mu.message },
          ],
          finished: mu.phase === 'RolledBack',
        };
      case 'CheckFailed':
        return waiting('PGUpgradeCheckFailed', detail);
      default:
        return { conditions: [progressing('True', 'PGUpgradeProgressing', detail)], finished: false };
    }
  }
  if (cluster.running !== spec.fromPostgresVersion)
    return waiting(
      'PGUpgradeInvalidForCluster',
      `PostgresCluster ${clusterName} runs PostgreSQL ${cluster.running ?? 'unknown'}, but the upgrade is from ${spec.fromPostgresVersion}`,
    );
  if (cluster.shutdown)
    return waiting(
      'PGClusterShutdown',
      `PostgresCluster ${clusterName} is shut down: Kanri checks the upgrade against the running server and then stops the instances itself; set spec.shutdown to false`,
    );
  return {
    conditions: [
      progressing(
        'True',
        'PGUpgradeProgressing',
        `asked PostgresCluster ${clusterName} to upgrade to ${spec.toPostgresVersion}`,
      ),
    ],
    request: {
      postgresVersion: spec.toPostgresVersion,
      ...(spec.toPostgresImage ? { image: spec.toPostgresImage } : {}),
    },
    finished: false,
  };
}
