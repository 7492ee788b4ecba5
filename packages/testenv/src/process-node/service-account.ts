/**
 * Credentials for a Pod's ServiceAccount: short-lived tokens from the TokenRequest API, bound to
 * the Pod (they stop working when it is deleted), and a kubeconfig that reads the token from a
 * file, so programs using `KubeClient.load()` act as the ServiceAccount and RBAC applies.
 */
import { chmod, chown, rename, writeFile } from 'node:fs/promises';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { stringify } from 'yaml';
import { type Api, encode } from './api.js';
import type { RunAs } from './users.js';

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: Date;
}

/** Asks the API server for a token of the Pod's ServiceAccount, bound to the Pod. */
export async function requestPodToken(
  api: Api,
  pod: Pod,
  audience: string | undefined,
  expirationSeconds: number,
): Promise<IssuedToken> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const serviceAccount = pod.spec?.serviceAccountName ?? 'default';
  const response = await api.createOrThrow<{ status: { token: string; expirationTimestamp: string } }>(
    `/api/v1/namespaces/${encode(namespace)}/serviceaccounts/${encode(serviceAccount)}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        ...(audience ? { audiences: [audience] } : {}),
        // The API server's minimum is 10 minutes.
        expirationSeconds: Math.max(600, expirationSeconds),
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
      },
    },
  );
  return { token: response.status.token, expiresAt: new Date(response.status.expirationTimestamp) };
}

/** Writes a secret file atomically, owned by the container's user. */
export async function writeSecretFile(path: string, content: string, mode: number, owner: RunAs | undefined) {
  const staging = `${path}.tmp-${process.pid}`;
  await writeFile(staging, content, { mode });
  await chmod(staging, mode);
  if (owner?.switch) await chown(staging, owner.uid, owner.gid);
  await rename(staging, path);
}

/** A kubeconfig for the Pod's ServiceAccount that reads its token from `tokenFile`. Pure. */
export function buildPodKubeconfig(input: {
  readonly server: string;
  readonly caPem: string;
  readonly tokenFile: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}): string {
  const user = `system:serviceaccount:${input.namespace}:${input.serviceAccount}`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'kanri-testenv',
        cluster: {
          server: input.server,
          'certificate-authority-data': Buffer.from(input.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: user, user: { tokenFile: input.tokenFile } }],
    contexts: [{ name: 'pod', context: { cluster: 'kanri-testenv', user, namespace: input.namespace } }],
    'current-context': 'pod',
  });
}
