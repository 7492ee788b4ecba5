/**
 * The environment contract between the generated Deployment and the operator's manager: the
 * Deployment (or chart values) decide leader election and the health/metrics address, and
 * `OperatorDefinition.manager()` reads them, so a value in the chart is never a dead setting.
 */
import type { ManagerOptions } from '@kanri/runtime';

/** Environment variables the generated Deployment sets. */
export const OPERATOR_ENV = {
  /** The Pod's namespace (downward API): where the leader-election Lease lives. */
  podNamespace: 'POD_NAMESPACE',
  /** `true` (default) or `false`. */
  leaderElection: 'KANRI_LEADER_ELECTION',
  /** `host:port` or `:port` of /healthz, /readyz and /metrics. Default `:8080`. */
  bindAddress: 'KANRI_BIND_ADDRESS',
} as const;

/**
 * The manager options the environment asks for: leader election on a Lease in `POD_NAMESPACE`
 * (or `fallbackNamespace`) unless `KANRI_LEADER_ELECTION=false`, and `KANRI_BIND_ADDRESS`.
 *
 * @example
 * ```ts
 * const manager = await Manager.create({ name: 'website-operator', ...managerOptionsFromEnv(process.env, 'website-system') });
 * ```
 */
export function managerOptionsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  fallbackNamespace: string,
): Pick<ManagerOptions, 'leaderElection' | 'bindAddress'> {
  const election = env[OPERATOR_ENV.leaderElection]?.trim().toLowerCase() || 'true';
  if (election !== 'true' && election !== 'false') {
    throw new Error(
      `${OPERATOR_ENV.leaderElection} must be "true" or "false", not "${env[OPERATOR_ENV.leaderElection]}"`,
    );
  }
  const bindAddress = env[OPERATOR_ENV.bindAddress]?.trim();
  return {
    ...(election === 'true'
      ? { leaderElection: { namespace: env[OPERATOR_ENV.podNamespace] || fallbackNamespace } }
      : {}),
    ...(bindAddress ? { bindAddress } : {}),
  };
}
