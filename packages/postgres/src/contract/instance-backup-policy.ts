/**
 * What RBAC cannot say about the agents' writes of PostgresBackup status, as a
 * ValidatingAdmissionPolicy keyed on the instance identity (instance-admission-policy.ts): the
 * instance Role grants `patch` on `postgresbackups/status` for the whole namespace, since the
 * primary selects its cluster's backups by label and RBAC names no label. Without this, an
 * instance of one cluster could mark another cluster's backup Succeeded, and the major-upgrade
 * gate of that cluster would believe it. Pure.
 */
import {
  forbiddenValidations,
  instanceIdentityVariables,
  instancePolicy,
  instancePolicyBinding,
} from './instance-admission-policy.js';
import { BACKUP_PLURAL, GROUP, VERSION } from './names.js';

/** The policy's name (and its binding's). */
export const INSTANCE_BACKUP_STATUS_POLICY = 'instance-backup-status-writes.postgres.kanri.dev';

/**
 * An instance of cluster X writes the status only of the PostgresBackups whose `spec.cluster` is
 * X (the spec is immutable, so the stored object's is the truth), answering 403 otherwise.
 *
 * @example
 * ```ts
 * for (const object of instanceBackupStatusPolicies()) await client.resourceFor(object).apply(object, { fieldManager: 'installer' });
 * ```
 */
export function instanceBackupStatusPolicies(): Record<string, unknown>[] {
  const policy = instancePolicy(INSTANCE_BACKUP_STATUS_POLICY, {
    matchConstraints: {
      resourceRules: [
        { apiGroups: [GROUP], apiVersions: [VERSION], operations: ['UPDATE'], resources: [`${BACKUP_PLURAL}/status`] },
      ],
    },
    variables: [
      ...instanceIdentityVariables,
      { name: 'owner', expression: "has(oldObject.spec) && has(oldObject.spec.cluster) ? oldObject.spec.cluster : ''" },
    ],
    validations: forbiddenValidations([
      {
        expression: 'variables.owner == variables.cluster',
        messageExpression:
          "'the instances of cluster ' + variables.cluster + ' may write the status only of its own PostgresBackups, not of ' + object.metadata.name + ' (spec.cluster ' + variables.owner + ')'",
      },
    ]),
  });
  return [policy, instancePolicyBinding(INSTANCE_BACKUP_STATUS_POLICY)];
}
