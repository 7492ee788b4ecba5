/**
 * Who may put Kanri's membership labels on a Pod or a PersistentVolumeClaim. The cluster's
 * NetworkPolicy admits Pods labelled `postgres.kanri.dev/cluster=<name>` to the agents' and
 * pgBackRest's ports, its Services select Pods by cluster and role, and the operator counts a
 * cluster's Pods and volumes by instance, instance set and repo-host labels: labels that anyone who
 * may create a Pod in the namespace could otherwise set. This ValidatingAdmissionPolicy lets only
 * the operator's identity create such objects or change those labels; an instance may still move
 * the role label (the instance policy says which Pods, and to what). Cluster administrators
 * (`system:masters`, who could remove the policy anyway) are left alone. Pure.
 */
import { INSTANCE_USER, LABEL, REPO_HOST_LABEL } from '../../contract/index.js';

/** The policy's name (its binding is named alike). */
export const MEMBER_LABEL_POLICY = 'member-labels.postgres.kanri.dev';

/** The labels that make an object a member of a cluster. */
export const MEMBER_LABELS = [LABEL.cluster, LABEL.instance, LABEL.instanceSet, LABEL.role, REPO_HOST_LABEL] as const;

const q = (s: string) => `'${s}'`;
const list = (items: readonly string[]) => `[${items.map(q).join(', ')}]`;

/**
 * The policy and its binding, keyed on the operator's username
 * (`system:serviceaccount:<namespace>:<name>`).
 *
 * @example
 * ```ts
 * memberLabelPolicies('system:serviceaccount:postgres-operator:postgres-operator');
 * ```
 */
export function memberLabelPolicies(operatorUser: string): Record<string, unknown>[] {
  const labels = { 'app.kubernetes.io/managed-by': 'kanri' };
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: MEMBER_LABEL_POLICY, labels },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['pods', 'persistentvolumeclaims'],
          },
        ],
      },
      matchConditions: [
        { name: 'not-the-operator', expression: `request.userInfo.username != ${q(operatorUser)}` },
        { name: 'not-a-cluster-administrator', expression: "!('system:masters' in request.userInfo.groups)" },
      ],
      variables: [
        { name: 'newLabels', expression: 'has(object.metadata.labels) ? object.metadata.labels : {}' },
        {
          name: 'oldLabels',
          expression:
            "request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}",
        },
        { name: 'instance', expression: `request.userInfo.username.matches(${q(INSTANCE_USER)})` },
      ],
      validations: [
        {
          expression: `request.operation != 'CREATE' || ${list(MEMBER_LABELS)}.all(k, !(k in variables.newLabels))`,
          messageExpression: `'only the PostgreSQL operator creates ' + request.resource.resource + ' labelled ${MEMBER_LABELS.join(', ')} (they make ' + object.metadata.name + ' a member of a cluster, reachable on its agents\\' ports): remove the labels'`,
        },
        {
          expression:
            `request.operation != 'UPDATE' || ${list(MEMBER_LABELS)}.all(k, (k == ${q(LABEL.role)} && variables.instance) || ` +
            '((k in variables.newLabels) == (k in variables.oldLabels) && (!(k in variables.newLabels) || variables.newLabels[k] == variables.oldLabels[k])))',
          messageExpression: `'only the PostgreSQL operator changes the labels ${MEMBER_LABELS.join(', ')} of ' + request.resource.resource + ' ' + object.metadata.name + ' (the instances, its role label)'`,
        },
      ].map((v) => ({ ...v, reason: 'Forbidden' })),
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: MEMBER_LABEL_POLICY, labels },
    spec: { policyName: MEMBER_LABEL_POLICY, validationActions: ['Deny'] },
  };
  return [policy, binding];
}
