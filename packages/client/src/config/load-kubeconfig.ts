/**
 * Finds the cluster to talk to, in kubectl's order: an explicit kubeconfig path, `KUBECONFIG`
 * (files merged), `~/.kube/config`, then the in-cluster service account. Never falls back to
 * localhost: when nothing is found the error lists every place that was looked at.
 */
import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import {
  type CredentialSource,
  type Credentials,
  execCredentials,
  staticCredentials,
  tokenFileCredentials,
} from './credentials.js';
import { KubeconfigError } from './kubeconfig-error.js';
import { type KubeconfigFile, type MergedKubeconfig, mergeKubeconfigs } from './kubeconfig-file.js';

/** TLS settings for the connection, PEM strings. */
export interface TlsSettings {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly servername?: string;
  readonly rejectUnauthorized: boolean;
}

/** Everything needed to reach and authenticate to one cluster. */
export interface ClusterConnection {
  readonly server: string;
  /** The context's namespace, else `default`. */
  readonly namespace: string;
  /** Where this came from, for messages: `context "kind" in /home/me/.kube/config`. */
  readonly source: string;
  readonly tls: TlsSettings;
  /** Bearer token, exec plugin or basic auth; absent when the client certificate in `tls` suffices. */
  readonly credentials?: CredentialSource;
}

export interface LoadKubeconfigOptions {
  /** Kubeconfig path(s), `:`-separated like KUBECONFIG; overrides the environment. */
  readonly kubeconfig?: string;
  /** A context other than the current one. */
  readonly context?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Where the in-cluster files live; tests point this elsewhere. */
  readonly serviceAccountDir?: string;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );
const decode = (data: string) => Buffer.from(data, 'base64').toString('utf8');

async function readConfigFile(path: string): Promise<KubeconfigFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}`, { cause: error });
  }
  // Loaded here, not at import: in a Pod the client uses the service account and never reads YAML,
  // and the parser is ~4 MiB of RSS a long-running operator or instance agent would carry for nothing.
  const { parse } = await import('yaml');
  try {
    return (parse(text) ?? {}) as KubeconfigFile;
  } catch (error) {
    throw new KubeconfigError(
      `kubeconfig ${path} is not valid YAML: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** Reads inline `*-data` or a file path relative to the kubeconfig that named it. */
async function pemFrom(
  data: string | undefined,
  path: string | undefined,
  file: string,
  field: string,
): Promise<string | undefined> {
  if (data) return decode(data);
  if (!path) return undefined;
  const full = isAbsolute(path) ? path : resolve(dirname(file), path);
  try {
    return await readFile(full, 'utf8');
  } catch (error) {
    throw new KubeconfigError(`${file}: ${field} ${full} cannot be read`, { cause: error });
  }
}

/** Resolves one context of merged kubeconfigs into a connection. */
export async function resolveContext(merged: MergedKubeconfig, contextName?: string): Promise<ClusterConnection> {
  const files = merged.files.join(delimiter);
  const name = contextName ?? merged.currentContext;
  if (!name) throw new KubeconfigError(`${files}: no current-context is set and no context was given`);
  const context = merged.contexts.get(name);
  if (!context) throw new KubeconfigError(`${files}: context "${name}" is not defined`);
  const { cluster: clusterName, user: userName, namespace } = context.entry.context;
  const cluster = merged.clusters.get(clusterName);
  if (!cluster)
    throw new KubeconfigError(
      `${context.file}: context "${name}" names cluster "${clusterName}", which is not defined`,
    );
  if (!cluster.entry.cluster.server)
    throw new KubeconfigError(`${cluster.file}: cluster "${clusterName}" has no server`);
  const user = userName ? merged.users.get(userName) : undefined;
  if (userName && !user)
    throw new KubeconfigError(`${context.file}: context "${name}" names user "${userName}", which is not defined`);
  const c = cluster.entry.cluster;
  const u = user?.entry.user ?? {};
  const userFile = user?.file ?? cluster.file;
  if (u['auth-provider']) {
    throw new KubeconfigError(
      `${userFile}: user "${userName}" uses auth-provider "${u['auth-provider'].name}", which was removed from Kubernetes; use an exec plugin`,
    );
  }
  let credentials: CredentialSource | undefined;
  if (u.exec) credentials = execCredentials(u.exec, dirname(userFile));
  else if (u.token) credentials = staticCredentials({ token: u.token });
  else if (u.tokenFile)
    credentials = tokenFileCredentials(isAbsolute(u.tokenFile) ? u.tokenFile : resolve(dirname(userFile), u.tokenFile));
  else if (u.username !== undefined)
    credentials = staticCredentials({ basic: `${u.username}:${u.password ?? ''}` } satisfies Credentials);
  return {
    server: c.server.replace(/\/+$/, ''),
    namespace: namespace || 'default',
    source: `context "${name}" in ${context.file}`,
    tls: {
      ca: await pemFrom(
        c['certificate-authority-data'],
        c['certificate-authority'],
        cluster.file,
        'certificate-authority',
      ),
      cert: await pemFrom(u['client-certificate-data'], u['client-certificate'], userFile, 'client-certificate'),
      key: await pemFrom(u['client-key-data'], u['client-key'], userFile, 'client-key'),
      servername: c['tls-server-name'],
      rejectUnauthorized: c['insecure-skip-tls-verify'] !== true,
    },
    credentials,
  };
}

/** The in-cluster connection: the API server from the service env vars and the mounted service account. */
async function inClusterConnection(env: NodeJS.ProcessEnv, dir: string): Promise<ClusterConnection> {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  const namespace = (await readFile(join(dir, 'namespace'), 'utf8').catch(() => 'default')).trim();
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    namespace,
    source: `in-cluster service account (${dir})`,
    tls: { ca: await readFile(join(dir, 'ca.crt'), 'utf8'), rejectUnauthorized: true },
    credentials: tokenFileCredentials(join(dir, 'token')),
  };
}

/**
 * Loads the connection to use.
 *
 * @example
 * ```ts
 * const connection = await loadKubeconfig();            // KUBECONFIG, ~/.kube/config or in-cluster
 * const other = await loadKubeconfig({ context: 'prod' });
 * ```
 */
export async function loadKubeconfig(options: LoadKubeconfigOptions = {}): Promise<ClusterConnection> {
  const env = options.env ?? process.env;
  const looked: string[] = [];
  const list = options.kubeconfig ?? env.KUBECONFIG;
  if (list) {
    const paths = list.split(delimiter).filter(Boolean);
    const present = [];
    // kubectl skips missing entries in KUBECONFIG; all missing is an error.
    for (const path of paths) if (await exists(path)) present.push(path);
    if (present.length === 0) {
      throw new KubeconfigError(
        `none of the kubeconfig files in ${options.kubeconfig ? 'the kubeconfig option' : 'KUBECONFIG'} exist: ${paths.join(', ')}`,
      );
    }
    const files = await Promise.all(present.map(async (path) => ({ path, config: await readConfigFile(path) })));
    return resolveContext(mergeKubeconfigs(files), options.context);
  }
  looked.push('KUBECONFIG (unset)');
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  if (await exists(home))
    return resolveContext(mergeKubeconfigs([{ path: home, config: await readConfigFile(home) }]), options.context);
  looked.push(`${home} (missing)`);
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (env.KUBERNETES_SERVICE_HOST && (await exists(join(dir, 'token')))) return inClusterConnection(env, dir);
  looked.push(
    `the in-cluster service account (${env.KUBERNETES_SERVICE_HOST ? `${join(dir, 'token')} missing` : 'KUBERNETES_SERVICE_HOST unset'})`,
  );
  throw new KubeconfigError(`no Kubernetes configuration found; looked at ${looked.join(', ')}`);
}
