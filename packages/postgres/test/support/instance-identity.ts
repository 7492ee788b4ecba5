/**
 * A client that authenticates as an instance's agent does: the cluster's ServiceAccount
 * `<cluster>-instance` with a token bound to one of its Pods (the kubelet, and testenv's process
 * nodes, give the agent exactly that), under the instance Role the operator would grant.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient, type KubeObject } from '@kanri/client';
import type { ControlPlane } from '@kanri/testenv';
import { parse, stringify } from 'yaml';
import { buildInstanceRoleRules, LABEL, names } from '../../src/contract/index.js';

/**
 * Creates the cluster's ServiceAccount, Role and RoleBinding, and Pod `pod` of the cluster, then
 * returns a client holding a token bound to that Pod.
 */
export async function instanceClient(
  cp: ControlPlane,
  admin: KubeClient,
  cluster: string,
  pod: string,
  namespace = 'default',
): Promise<KubeClient> {
  const apply = (o: Record<string, unknown>) =>
    admin.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test', force: true });
  const account = names.instanceServiceAccount(cluster);
  await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account, namespace } });
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: account, namespace },
    rules: buildInstanceRoleRules(cluster, []),
  });
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: account, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
  });
  const created = await admin.resource<KubeObject>('v1', 'Pod').create({
    metadata: { name: pod, namespace, labels: { [LABEL.cluster]: cluster, [LABEL.instance]: pod } },
    spec: { serviceAccountName: account, containers: [{ name: 'c', image: 'example/app:1' }] },
  } as KubeObject);
  const { status } = (await admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod, uid: created.metadata?.uid },
      },
    },
  })) as { status: { token: string } };
  const kubeconfig = parse(await readFile(cp.kubeconfigPath, 'utf8'));
  kubeconfig.users = [{ name: 'agent', user: { token: status.token } }];
  for (const context of kubeconfig.contexts) context.context.user = 'agent';
  const path = join(cp.dataDir ?? tmpdir(), `agent-${pod}-kubeconfig-${process.pid}`);
  await writeFile(path, stringify(kubeconfig), { mode: 0o600 });
  return KubeClient.load({ kubeconfig: path, maxAttempts: 1 });
}
