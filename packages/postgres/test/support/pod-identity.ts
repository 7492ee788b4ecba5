/**
 * A client that authenticates as a Pod's own identity, as the kubelet (and testenv's process
 * nodes) give its agent: the Pod's ServiceAccount with a token bound to that Pod, so the admission
 * policies see `authentication.kubernetes.io/pod-name`. Requested by the admin (TokenRequest).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, KubeClient, type KubeObject } from '@kanri/client';
import type { ControlPlane } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { parse, stringify } from 'yaml';

/** A client as `pod`'s ServiceAccount (the one its spec names), its token bound to the Pod. */
export async function clientAsPod(cp: ControlPlane, admin: KubeClient, pod: string, namespace = 'default') {
  const object = await admin.resource<Pod & KubeObject>('v1', 'Pod').get(pod, { namespace });
  const account = object.spec?.serviceAccountName ?? 'default';
  const { status } = (await admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod, uid: object.metadata?.uid },
      },
    },
  })) as { status: { token: string } };
  const kubeconfig = parse(await readFile(cp.kubeconfigPath, 'utf8'));
  kubeconfig.users = [{ name: 'pod', user: { token: status.token } }];
  for (const context of kubeconfig.contexts) context.context.user = 'pod';
  const path = join(cp.dataDir ?? tmpdir(), `pod-kubeconfig-${pod}-${process.pid}`);
  await writeFile(path, stringify(kubeconfig), { mode: 0o600 });
  return { account, client: await KubeClient.load({ kubeconfig: path, maxAttempts: 1 }) };
}

/** The refusal of `write` as `<status>: <message>`, or 'allowed'. */
export function attempt(write: () => Promise<unknown>): Promise<string> {
  return write().then(
    () => 'allowed',
    (e: unknown) => (e instanceof ApiError ? `${e.statusCode}: ${e.message}` : `not an API error: ${e}`),
  );
}
