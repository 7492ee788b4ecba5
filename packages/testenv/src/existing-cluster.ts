/** envtest's USE_EXISTING_CLUSTER for Kanri: run the same tests against a cluster the user already has. */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parse } from 'yaml';
import type { Kubeconfig } from './credentials/kubeconfig.js';
import { TestenvError, UnsupportedError } from './errors.js';

/** True when `KANRI_USE_EXISTING_CLUSTER` (or envtest's `USE_EXISTING_CLUSTER`) is `true` or `1`. */
export function existingClusterRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = (env.KANRI_USE_EXISTING_CLUSTER ?? env.USE_EXISTING_CLUSTER ?? '').toLowerCase();
  return value === 'true' || value === '1';
}

/** The kubeconfig file that applies: the first entry of `KUBECONFIG`, else `~/.kube/config`. */
export function existingKubeconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const first = (env.KUBECONFIG ?? '').split(delimiter).find((p) => p.length > 0);
  return first ?? join(homedir(), '.kube', 'config');
}

export interface ExistingCluster {
  readonly server: string;
  readonly kubeconfig: Kubeconfig;
  readonly kubeconfigPath: string;
}

export async function loadExistingCluster(env: NodeJS.ProcessEnv = process.env): Promise<ExistingCluster> {
  const path = existingKubeconfigPath(env);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new TestenvError(
      `an existing cluster was requested (KANRI_USE_EXISTING_CLUSTER) but its kubeconfig ${path} cannot be read; set KUBECONFIG`,
      { cause: error },
    );
  }
  const kubeconfig = parse(text) as Kubeconfig;
  const contextName = kubeconfig?.['current-context'];
  const context = kubeconfig?.contexts?.find((c) => c.name === contextName)?.context;
  const server = kubeconfig?.clusters?.find((c) => c.name === context?.cluster)?.cluster.server;
  if (!server) {
    throw new TestenvError(`${path}: current-context "${contextName ?? ''}" does not name a cluster with a server`);
  }
  return { server, kubeconfig, kubeconfigPath: path };
}

export function addUserUnsupported(): never {
  throw new UnsupportedError(
    'addUser needs the control plane CA key, which an existing cluster (KANRI_USE_EXISTING_CLUSTER) does not give testenv',
  );
}
