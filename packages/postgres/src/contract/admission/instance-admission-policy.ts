/**
 * What RBAC cannot say about the agent's writes, as ValidatingAdmissionPolicies (CEL in the API
 * server) keyed on the identity of the request: the cluster's ServiceAccount `<cluster>-instance`
 * with a token bound to one Pod (`authentication.kubernetes.io/pod-name` in `userInfo.extra`).
 * RBAC grants `patch` on the namespace's Pods (a new primary moves the role label off a dead
 * primary's Pod) and Lease `create` by any name; these policies narrow them to:
 *
 * - its own Pod: the role label, the status report, the pgBackRest server and key annotations;
 * - another Pod of its cluster: the role label to `replica`, nothing else;
 * - no other Pod, no spec, no other label or annotation, no owner or finalizer;
 * - Lease creation: its cluster's leader Lease only.
 *
 * Installed with the operator (the chart, the plain manifests, the test harness). Pure.
 */

import { ANNOTATION, LABEL } from '../names.js';
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

/** The instance ServiceAccount's name, `names.instanceServiceAccount`, matched on the user name. */
export const INSTANCE_USER = '^system:serviceaccount:[^:]+:[a-z0-9]([-a-z0-9]*[a-z0-9])?-instance$';
const SUFFIX = '-instance'.length;

const identityVariables = [
  { name: 'account', expression: "request.userInfo.username.split(':')[3]" },
  { name: 'cluster', expression: `variables.account.substring(0, variables.account.size() - ${SUFFIX})` },
  boundPodVariable,
];

const matchInstances = [
  { name: 'kanri-instance', expression: `request.userInfo.username.matches(${q(INSTANCE_USER)})` },
];

const policy = (name: string, spec: Record<string, unknown>) => admissionPolicy(name, matchInstances, spec);
const binding = admissionBinding;

/** The names of the two policies (and their bindings, named alike). */
export const INSTANCE_POLICY = {
  pods: 'instance-pod-writes.postgres.kanri.dev',
  leases: 'instance-lease-writes.postgres.kanri.dev',
} as const;

/**
 * The policies and their bindings, ready to apply.
 *
 * @example
 * ```ts
 * for (const object of instanceAdmissionPolicies()) await client.resourceFor(object).apply(object, { fieldManager: 'installer' });
 * ```
 */
export function instanceAdmissionPolicies(): Record<string, unknown>[] {
  const oldLabels = 'variables.oldLabels';
  const newLabels = 'variables.newLabels';
  const role = q(LABEL.role);
  const pods = policy(INSTANCE_POLICY.pods, {
    matchConstraints: {
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }],
    },
    variables: [
      ...identityVariables,
      { name: 'oldLabels', expression: orEmpty('oldObject.metadata', 'labels') },
      { name: 'newLabels', expression: orEmpty('object.metadata', 'labels') },
      { name: 'oldAnnotations', expression: orEmpty('oldObject.metadata', 'annotations') },
      { name: 'newAnnotations', expression: orEmpty('object.metadata', 'annotations') },
      { name: 'own', expression: 'object.metadata.name == variables.pod' },
    ],
    validations: forbidden([
      {
        expression: "variables.pod != ''",
        message: 'an instance writes Pods only with a token bound to its own Pod',
      },
      {
        expression: `${q(LABEL.cluster)} in ${oldLabels} && ${oldLabels}[${q(LABEL.cluster)}] == variables.cluster`,
        messageExpression: `'the instances of cluster ' + variables.cluster + ' may change only that cluster\\'s Pods, not ' + object.metadata.name`,
      },
      {
        expression:
          'object.spec == oldObject.spec && ' +
          '(has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) == (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []) && ' +
          '(has(object.metadata.finalizers) ? object.metadata.finalizers : []) == (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : [])',
        message: "an instance may not change a Pod's spec, owners or finalizers",
      },
      {
        expression: onlyChanged(oldLabels, newLabels, [LABEL.role]),
        messageExpression: `'an instance may change no label of ' + object.metadata.name + ' but ${LABEL.role}'`,
      },
      {
        expression:
          `variables.own || ((!(${role} in ${newLabels}) || ${newLabels}[${role}] == 'replica' || ` +
          `(${role} in ${oldLabels} && ${oldLabels}[${role}] == ${newLabels}[${role}])) && ` +
          'variables.newAnnotations == variables.oldAnnotations)',
        messageExpression: `'an instance may only move the role label of another Pod (' + object.metadata.name + ') to replica'`,
      },
      {
        expression: `!variables.own || (${onlyChanged('variables.oldAnnotations', 'variables.newAnnotations', [ANNOTATION.status, ANNOTATION_PGBACKREST_SERVER, ANNOTATION_PGBACKREST_KEY])})`,
        message: `an instance may change no annotation of its Pod but ${ANNOTATION.status}, ${ANNOTATION_PGBACKREST_SERVER} and ${ANNOTATION_PGBACKREST_KEY}`,
      },
    ]),
  });
  const leases = policy(INSTANCE_POLICY.leases, {
    matchConstraints: {
      resourceRules: [
        { apiGroups: ['coordination.k8s.io'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['leases'] },
      ],
    },
    variables: identityVariables,
    validations: forbidden([
      {
        expression: "object.metadata.name == variables.cluster + '-leader'",
        messageExpression: `'the instances of cluster ' + variables.cluster + ' may create only its Lease ' + variables.cluster + '-leader'`,
      },
    ]),
  });
  return [pods, binding(INSTANCE_POLICY.pods), leases, binding(INSTANCE_POLICY.leases)];
}

/** The parts every instance policy is made of, for the policies kept in their own files (instance-backup-policy.ts). */
export { identityVariables as instanceIdentityVariables, policy as instancePolicy };
