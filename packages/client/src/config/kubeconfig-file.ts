/** The kubeconfig file format (the parts clients act on), and the kubectl rules for merging several files. */

export interface ExecConfig {
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: readonly { readonly name: string; readonly value: string }[] | null;
  readonly apiVersion?: string;
  readonly installHint?: string;
  readonly provideClusterInfo?: boolean;
  readonly interactiveMode?: string;
}

export interface NamedCluster {
  readonly name: string;
  readonly cluster: {
    readonly server: string;
    readonly 'certificate-authority'?: string;
    readonly 'certificate-authority-data'?: string;
    readonly 'insecure-skip-tls-verify'?: boolean;
    readonly 'tls-server-name'?: string;
    readonly 'proxy-url'?: string;
  };
}

export interface NamedUser {
  readonly name: string;
  readonly user: {
    readonly 'client-certificate'?: string;
    readonly 'client-certificate-data'?: string;
    readonly 'client-key'?: string;
    readonly 'client-key-data'?: string;
    readonly token?: string;
    readonly tokenFile?: string;
    readonly username?: string;
    readonly password?: string;
    readonly exec?: ExecConfig;
    readonly 'auth-provider'?: { readonly name: string };
  };
}

export interface NamedContext {
  readonly name: string;
  readonly context: { readonly cluster: string; readonly user: string; readonly namespace?: string };
}

export interface KubeconfigFile {
  readonly clusters?: readonly NamedCluster[] | null;
  readonly users?: readonly NamedUser[] | null;
  readonly contexts?: readonly NamedContext[] | null;
  readonly 'current-context'?: string;
}

/** An entry together with the file that defined it, since relative paths in it are relative to that file. */
export interface Sourced<T> {
  readonly entry: T;
  readonly file: string;
}

export interface MergedKubeconfig {
  readonly clusters: ReadonlyMap<string, Sourced<NamedCluster>>;
  readonly users: ReadonlyMap<string, Sourced<NamedUser>>;
  readonly contexts: ReadonlyMap<string, Sourced<NamedContext>>;
  readonly currentContext: string | undefined;
  readonly files: readonly string[];
}

/**
 * Merges kubeconfig files the way kubectl does with a `KUBECONFIG` list: for each cluster, user
 * and context name the first file that defines it wins, and so does the first non-empty
 * current-context. Pure.
 */
export function mergeKubeconfigs(
  files: readonly { readonly path: string; readonly config: KubeconfigFile }[],
): MergedKubeconfig {
  const clusters = new Map<string, Sourced<NamedCluster>>();
  const users = new Map<string, Sourced<NamedUser>>();
  const contexts = new Map<string, Sourced<NamedContext>>();
  let currentContext: string | undefined;
  for (const { path, config } of files) {
    for (const c of config.clusters ?? []) if (!clusters.has(c.name)) clusters.set(c.name, { entry: c, file: path });
    for (const u of config.users ?? []) if (!users.has(u.name)) users.set(u.name, { entry: u, file: path });
    for (const c of config.contexts ?? []) if (!contexts.has(c.name)) contexts.set(c.name, { entry: c, file: path });
    currentContext ||= config['current-context'] || undefined;
  }
  return { clusters, users, contexts, currentContext, files: files.map((f) => f.path) };
}
