/**
 * Clients that authenticate as an agent does: a cluster's ServiceAccount (`<cluster>-instance`
 * for an instance, `<cluster>-repo-host` for its repo host) with a token bound to one of its Pods
 * (the kubelet, and testenv's process nodes, give the agent exactly that), under the Role the
 * operator would grant that account.
 */

import type { PolicyRule } from '@kanri/api';
import type { KubeClient, KubeObject } from '@kanri/client';
import type { ControlPlane } from '@kanri/testenv';
import { buildInstanceRoleRules, buildRepoHostRoleRules, LABEL, names } from '../../src/contract/index.js';
import { clientAsPod } from './pod-identity.js';

/** Creates `account`, its Role and RoleBinding, and Pod `pod` running as it; a client bound to that Pod. */
async function agentClient(
  cp: ControlPlane,
  admin: KubeClient,
  input: {
    readonly account: string;
    readonly rules: readonly PolicyRule[];
    readonly pod: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly namespace: string;
  },
): Promise<KubeClient> {
  const { account, namespace } = input;
  const apply = (o: Record<string, unknown>) =>
    admin.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test', force: true });
  await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account, namespace } });
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: account, namespace },
    rules: input.rules,
  });
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: account, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
  });
  await admin.resource<KubeObject>('v1', 'Pod').create({
    metadata: { name: input.pod, namespace, labels: { ...input.labels } },
    spec: { serviceAccountName: account, containers: [{ name: 'c', image: 'example/app:1' }] },
  } as KubeObject);
  return (await clientAsPod(cp, admin, input.pod, namespace)).client;
}

/** Instance `pod` of `cluster`, under the instance Role. */
export function instanceClient(
  cp: ControlPlane,
  admin: KubeClient,
  cluster: string,
  pod: string,
  namespace = 'default',
): Promise<KubeClient> {
  return agentClient(cp, admin, {
    account: names.instanceServiceAccount(cluster),
    rules: buildInstanceRoleRules(cluster, []),
    pod,
    labels: { [LABEL.cluster]: cluster, [LABEL.instance]: pod },
    namespace,
  });
}

/** The repo host of `cluster` (its Pod, names.repoHost), under the repo host's Role. */
export function repoHostClient(
  cp: ControlPlane,
  admin: KubeClient,
  cluster: string,
  namespace = 'default',
): Promise<KubeClient> {
  return agentClient(cp, admin, {
    account: names.repoHostServiceAccount(cluster),
    rules: buildRepoHostRoleRules(cluster),
    pod: names.repoHost(cluster),
    labels: { [LABEL.cluster]: cluster },
    namespace,
  });
}
