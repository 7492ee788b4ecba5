/**
 * What the operator's identity may put in a Pod it creates, beside owning it (@kanri/api's
 * owned-writes policy): it runs as one of its cluster's own ServiceAccounts, and touches none of
 * the node. The operator may create Pods in every namespace that holds a cluster; without these
 * rules a stolen operator token would run a Pod as any ServiceAccount there, or as root on a node.
 * Pure.
 */
import type { OwnedWriteValidation } from '@kanri/api';
import { names } from '../../contract/index.js';

/**
 * The ServiceAccounts a cluster's Pods run as, by cluster name: the instances', and the repo host's
 * own (issue 37, finding 3), which reads no Secret.
 */
const POD_SERVICE_ACCOUNTS: readonly ((cluster: string) => string)[] = [
  names.instanceServiceAccount,
  names.repoHostServiceAccount,
];

/** Each name function's suffix after the cluster's name, for CEL that knows the cluster as `variables.owner`. */
const accounts = POD_SERVICE_ACCOUNTS.map((name) => `variables.owner + '${name('')}'`).join(', ');
const flag = (field: string) => `(has(${field}) && ${field})`;

/**
 * The rules, for `defineOperator({ ownership: { validations } })`.
 *
 * @example
 * ```ts
 * defineOperator({ ..., ownership: { label: LABEL.cluster, owner: { apiVersion: API_VERSION, kind: KIND }, validations: operatorPodRules } });
 * ```
 */
export const operatorPodRules: readonly OwnedWriteValidation[] = [
  {
    resources: ['pods'],
    expression: `has(object.spec.serviceAccountName) && object.spec.serviceAccountName in [${accounts}]`,
    message: `the operator runs a cluster's Pods only as its own ServiceAccount (${POD_SERVICE_ACCOUNTS.map((n) => n('<cluster>')).join(', ')})`,
  },
  {
    resources: ['pods'],
    expression:
      `!${flag('object.spec.hostNetwork')} && !${flag('object.spec.hostPID')} && !${flag('object.spec.hostIPC')} && ` +
      '(!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath)))',
    message: "the operator's Pods share none of the node's namespaces and mount none of its paths",
  },
  {
    resources: ['pods'],
    expression:
      '(has(object.spec.initContainers) ? object.spec.initContainers : []).all(c, !has(c.securityContext) || !' +
      `${flag('c.securityContext.privileged')}) && object.spec.containers.all(c, !has(c.securityContext) || !${flag('c.securityContext.privileged')})`,
    message: "the operator's Pods run no privileged container",
  },
];
