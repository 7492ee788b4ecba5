/**
 * The environment contract between the generated Deployment and the operator's manager: the
 * Deployment (or chart values) decide leader election, the health/metrics address and whether the
 * CRD deletion guard runs, and `OperatorDefinition.manager()` reads them, so a value in the chart
 * is never a dead setting.
 */
import type { ManagerOptions } from '@kanri/runtime';

/** Port of the admission webhook server in the operator's container (the guard's Service targets it). */
export const WEBHOOK_PORT = 9443;

/** Environment variables the generated Deployment sets. */
export const OPERATOR_ENV = {
  /** The Pod's namespace (downward API): where the leader-election Lease lives. */
  podNamespace: 'POD_NAMESPACE',
  /** `true` (default) or `false`. */
  leaderElection: 'KANRI_LEADER_ELECTION',
  /** `host:port` or `:port` of /healthz, /readyz and /metrics. Default `:8080`. */
  bindAddress: 'KANRI_BIND_ADDRESS',
  /** `true` (default) or `false`: serve the CRD deletion guard webhook, whose objects the install then includes. */
  crdDeletionGuard: 'KANRI_CRD_DELETION_GUARD',
  /** One namespace to watch (the install's Roles are there); empty or unset: every namespace. */
  watchNamespace: 'KANRI_WATCH_NAMESPACE',
  /**
   * `check` (default): the operator reads its admission policies and runs no workloads while one is
   * missing or unreadable; `installed`: the installer vouches for them, for an install that may not
   * read cluster-scoped objects (one namespace). A policy it can read and finds missing still stops it.
   */
  admissionPolicies: 'KANRI_ADMISSION_POLICIES',
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/** `true` or `false` (any case, default `true` when unset or empty); anything else is a mistake worth stopping for. */
function booleanFromEnv(env: Env, name: string): boolean {
  const value = env[name]?.trim().toLowerCase() || 'true';
  if (value !== 'true' && value !== 'false') throw new Error(`${name} must be "true" or "false", not "${env[name]}"`);
  return value === 'true';
}

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
  env: Env,
  fallbackNamespace: string,
): Pick<ManagerOptions, 'leaderElection' | 'bindAddress'> {
  const election = booleanFromEnv(env, OPERATOR_ENV.leaderElection);
  const bindAddress = env[OPERATOR_ENV.bindAddress]?.trim();
  return {
    ...(election ? { leaderElection: { namespace: env[OPERATOR_ENV.podNamespace] || fallbackNamespace } } : {}),
    ...(bindAddress ? { bindAddress } : {}),
  };
}

/**
 * Whether the install wants the CRD deletion guard served: false only with
 * `KANRI_CRD_DELETION_GUARD=false` (the chart's `crdDeletionGuard.enabled: false`, which also
 * leaves out the webhook's Service and ValidatingWebhookConfiguration).
 *
 * @example
 * ```ts
 * if (guard && crdDeletionGuardFromEnv(process.env)) options.webhook = { ... };
 * ```
 */
export function crdDeletionGuardFromEnv(env: Env): boolean {
  return booleanFromEnv(env, OPERATOR_ENV.crdDeletionGuard);
}

/**
 * The one namespace the install watches (`KANRI_WATCH_NAMESPACE`), or undefined for all of them.
 *
 * @example
 * ```ts
 * watchNamespaceFromEnv({ KANRI_WATCH_NAMESPACE: 'team-a' }); // 'team-a'
 * ```
 */
export function watchNamespaceFromEnv(env: Env): string | undefined {
  return env[OPERATOR_ENV.watchNamespace]?.trim() || undefined;
}

/**
 * Whether the installer vouches for the operator's admission policies (`KANRI_ADMISSION_POLICIES=installed`)
 * or the operator must see them itself (`check`, the default); anything else is a mistake worth stopping for.
 *
 * @example
 * ```ts
 * admissionPolicyCheckFromEnv({ KANRI_ADMISSION_POLICIES: 'installed' }); // 'installed'
 * ```
 */
export function admissionPolicyCheckFromEnv(env: Env): 'check' | 'installed' {
  const value = env[OPERATOR_ENV.admissionPolicies]?.trim().toLowerCase() || 'check';
  if (value !== 'check' && value !== 'installed')
    throw new Error(
      `${OPERATOR_ENV.admissionPolicies} must be "check" or "installed", not "${env[OPERATOR_ENV.admissionPolicies]}"`,
    );
  return value;
}
