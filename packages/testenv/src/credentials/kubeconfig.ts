/** Builds kubeconfig documents (pure) and writes them with owner-only permissions, since they hold private keys. */
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';

/** The kubeconfig format as testenv writes it; fields of other kubeconfigs (tokens, exec plugins) pass through untyped. */
export interface Kubeconfig {
  apiVersion: 'v1';
  kind: 'Config';
  clusters: {
    name: string;
    cluster: { server: string; 'certificate-authority-data'?: string; [field: string]: unknown };
  }[];
  users: {
    name: string;
    user: { 'client-certificate-data'?: string; 'client-key-data'?: string; [field: string]: unknown };
  }[];
  contexts: { name: string; context: { cluster: string; user: string; namespace?: string } }[];
  'current-context': string;
  preferences?: Record<string, unknown>;
}

export interface KubeconfigInput {
  readonly clusterName: string;
  readonly server: string;
  readonly caPem: string;
  readonly userName: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly namespace?: string;
}

const base64 = (pem: string) => Buffer.from(pem).toString('base64');

/** A single-cluster, single-user kubeconfig with credentials inline. */
export function buildKubeconfig(input: KubeconfigInput): Kubeconfig {
  const contextName = `${input.userName}@${input.clusterName}`;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: input.clusterName, cluster: { server: input.server, 'certificate-authority-data': base64(input.caPem) } },
    ],
    users: [
      {
        name: input.userName,
        user: { 'client-certificate-data': base64(input.certPem), 'client-key-data': base64(input.keyPem) },
      },
    ],
    contexts: [
      {
        name: contextName,
        context: {
          cluster: input.clusterName,
          user: input.userName,
          ...(input.namespace ? { namespace: input.namespace } : {}),
        },
      },
    ],
    'current-context': contextName,
    preferences: {},
  };
}

export async function writeKubeconfig(path: string, kubeconfig: Kubeconfig): Promise<void> {
  await writeFile(path, stringify(kubeconfig), { mode: 0o600 });
}
