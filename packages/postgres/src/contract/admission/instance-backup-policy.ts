/**
 * What RBAC cannot say about the agents' writes of PostgresBackup status, as
 * ValidatingAdmissionPolicies keyed on the agent's identity: the instance Role and the repo host's
 * Role grant `patch` on `postgresbackups/status` for the whole namespace, since the primary (or,
 * with a volume repo, the repo host) selects its cluster's backups by label and RBAC names no
 * label. Without these, an agent of one cluster could mark another cluster's backup Succeeded, and
 * the major-upgrade gate of that cluster would believe it. Pure.
 */

import { BACKUP_PLURAL, GROUP, VERSION } from '../names.js';
import { admissionBinding, forbidden } from './admission-cel.js';
import { instanceIdentityVariables, instancePolicy } from './instance-admission-policy.js';

/** The instances' policy's name (and its binding's). */
export const INSTANCE_BACKUP_STATUS_POLICY = 'instance-backup-status-writes.postgres.kanri.dev';

/** An agent identity, as a backup status policy is keyed on it. */
export interface BackupStatusWriter {
  /** The policy's name (and its binding's). */
  readonly name: string;
  /** Makes the policy, matching only the identity's requests. */
  readonly policy: (name: string, spec: Record<string, unknown>) => Record<string, unknown>;
  /** Variables that set `variables.cluster`, the cluster the identity belongs to. */
  readonly identityVariables: readonly unknown[];
  /** Who writes, as the refusal names it: `the instances`, `the repo host`. */
  readonly who: string;
}

/**
 * The identity of cluster X writes the status only of the PostgresBackups whose `spec.cluster` is X
 * (the spec is immutable, so the stored object's is the truth), answering 403 otherwise.
 *
 * @example
 * ```ts
 * backupStatusPolicies({ name: 'x.postgres.kanri.dev', policy, identityVariables, who: 'the repo host' });
 * ```
 */
export function backupStatusPolicies(writer: BackupStatusWriter): Record<string, unknown>[] {
  const policy = writer.policy(writer.name, {
    matchConstraints: {
      resourceRules: [
        { apiGroups: [GROUP], apiVersions: [VERSION], operations: ['UPDATE'], resources: [`${BACKUP_PLURAL}/status`] },
      ],
    },
    variables: [
      ...writer.identityVariables,
      { name: 'owner', expression: "has(oldObject.spec) && has(oldObject.spec.cluster) ? oldObject.spec.cluster : ''" },
    ],
    validations: forbidden([
      {
        expression: 'variables.owner == variables.cluster',
        messageExpression: `'${writer.who} of cluster ' + variables.cluster + ' may write the status only of its own PostgresBackups, not of ' + object.metadata.name + ' (spec.cluster ' + variables.owner + ')'`,
      },
    ]),
  });
  return [policy, admissionBinding(writer.name)];
}

/**
 * The instances' policy and its binding, ready to apply.
 *
 * @example
 * ```ts
 * for (const object of instanceBackupStatusPolicies()) await client.resourceFor(object).apply(object, { fieldManager: 'installer' });
 * ```
 */
export function instanceBackupStatusPolicies(): Record<string, unknown>[] {
  return backupStatusPolicies({
    name: INSTANCE_BACKUP_STATUS_POLICY,
    policy: instancePolicy,
    identityVariables: instanceIdentityVariables,
    who: 'the instances',
  });
}
