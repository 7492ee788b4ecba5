/**
 * What RBAC cannot say about the repo host's writes, as a ValidatingAdmissionPolicy keyed on its
 * identity: the ServiceAccount `<cluster>-repo-host` (names.repoHostServiceAccount) with a token
 * bound to one Pod. Its Role (contract/repo-host-rbac.ts) lets it patch only its own Pod by name;
 * this policy narrows that patch to what its agent publishes there, its pgBackRest server and key:
 *
 * - only the Pod its token is bound to, which must be its cluster's repo host (named as the account);
 * - no label at all (the role label least of all: a repo host is never `primary`), no other
 *   annotation (not the certificate the operator writes), no spec, owner or finalizer.
 *
 * Unlike the instances' account it matches no `-instance` name, so the instance policies never
 * apply to it, and it never gets their leeway (its own role label, another Pod's to replica). A
 * second policy scopes its writes of PostgresBackup status to its own cluster's backups, as the
 * instances' are (instance-backup-policy.ts).
 * Installed with the operator (the chart, the plain manifests, the test harness). Pure.
 */

import { LABEL } from '../names.js';
import { ANNOTATION_PGBACKREST_KEY, ANNOTATION_PGBACKREST_SERVER } from '../repo-host.js';
import {
  admissionBinding,
  admissionPolicy,
  boundPodVariable,
  forbidden,
  onlyChanged,
  orEmpty,
  q,
} from './admission-cel.js';
import { backupStatusPolicies } from './instance-backup-policy.js';

/** The repo host's ServiceAccount name, `names.repoHostServiceAccount`, matched on the user name. */
const REPO_HOST_USER = '^system:serviceaccount:[^:]+:[a-z0-9]([-a-z0-9]*[a-z0-9])?-repo-host$';
const SUFFIX = '-repo-host'.length;

/** The policies' names (and their bindings'). */
export const REPO_HOST_POLICY = {
  pods: 'repo-host-pod-writes.postgres.kanri.dev',
  backupStatus: 'repo-host-backup-status-writes.postgres.kanri.dev',
} as const;

const matchRepoHost = [
  { name: 'kanri-repo-host', expression: `request.userInfo.username.matches(${q(REPO_HOST_USER)})` },
];
const identityVariables = [
  { name: 'account', expression: "request.userInfo.username.split(':')[3]" },
  { name: 'cluster', expression: `variables.account.substring(0, variables.account.size() - ${SUFFIX})` },
  boundPodVariable,
];

/** The annotations the repo host's agent writes on its own Pod. */
export const REPO_HOST_WRITABLE_ANNOTATIONS = [ANNOTATION_PGBACKREST_SERVER, ANNOTATION_PGBACKREST_KEY] as const;

/**
 * The policies and their bindings, ready to apply.
 *
 * @example
 * ```ts
 * for (const object of repoHostAdmissionPolicies()) await client.resourceFor(object).apply(object, { fieldManager: 'installer' });
 * ```
 */
export function repoHostAdmissionPolicies(): Record<string, unknown>[] {
  const oldLabels = orEmpty('oldObject.metadata', 'labels');
  const newLabels = orEmpty('object.metadata', 'labels');
  const pods = admissionPolicy(REPO_HOST_POLICY.pods, matchRepoHost, {
    matchConstraints: {
      resourceRules: [
        // RBAC grants it no Pod create or delete: only the patch of its own Pod is left to narrow.
        { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] },
      ],
    },
    variables: [
      ...identityVariables,
      { name: 'oldAnnotations', expression: orEmpty('oldObject.metadata', 'annotations') },
      { name: 'newAnnotations', expression: orEmpty('object.metadata', 'annotations') },
    ],
    validations: forbidden([
      {
        expression: "variables.pod != ''",
        message: 'a repo host writes Pods only with a token bound to its own Pod',
      },
      {
        expression:
          'object.metadata.name == variables.pod && variables.pod == variables.account && ' +
          `${q(LABEL.cluster)} in ${oldLabels} && ${oldLabels}[${q(LABEL.cluster)}] == variables.cluster`,
        messageExpression: `'the repo host of cluster ' + variables.cluster + ' may change only its own Pod ' + variables.account + ', not ' + object.metadata.name`,
      },
      {
        expression:
          'object.spec == oldObject.spec && ' +
          '(has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) == (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []) && ' +
          '(has(object.metadata.finalizers) ? object.metadata.finalizers : []) == (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : [])',
        message: "a repo host may not change a Pod's spec, owners or finalizers",
      },
      {
        expression: `${newLabels} == ${oldLabels}`,
        message: `a repo host may change no label of its Pod (it has no role: never ${LABEL.role})`,
      },
      {
        expression: onlyChanged('variables.oldAnnotations', 'variables.newAnnotations', REPO_HOST_WRITABLE_ANNOTATIONS),
        message: `a repo host may change no annotation of its Pod but ${REPO_HOST_WRITABLE_ANNOTATIONS.join(' and ')}`,
      },
    ]),
  });
  return [
    pods,
    admissionBinding(REPO_HOST_POLICY.pods),
    ...backupStatusPolicies({
      name: REPO_HOST_POLICY.backupStatus,
      policy: (name, spec) => admissionPolicy(name, matchRepoHost, spec),
      identityVariables,
      who: 'the repo host',
    }),
  ];
}
