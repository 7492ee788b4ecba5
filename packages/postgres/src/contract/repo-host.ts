/**
 * The repo host, as PGO runs it for `volume` repos: one Pod per cluster (the agent image, started
 * with the argument `repo-host`, REPO_HOST_ARG in instance-environment.ts) that mounts each volume
 * repo's PVC at `/pgbackrest/<repo>` and serves it over pgBackRest's TLS server. The instances
 * archive, restore and create the stanza through it; it runs the cluster's backups, reaching the
 * primary's own pgBackRest TLS server (pgBackRest backs up only from the host that holds the repo).
 * It runs as its own ServiceAccount (contract/repo-host-rbac.ts), never the instances'.
 *
 * Certificates, one key per Pod, made where it is used (as the peer identities are): each Pod's
 * agent makes an ECDSA P-256 key in its run volume and publishes the public half on its own Pod
 * ({@link ANNOTATION_PGBACKREST_KEY}); the operator, which keeps a CA per cluster (Secret
 * {@link names.pgbackrestCa}, never mounted), certifies it for the Pod's IP onto the Pod
 * ({@link ANNOTATION_PGBACKREST_CERTIFICATE}, which no agent may write). No Secret holds a Pod's
 * key. Every certificate carries the cluster's common name, {@link pgbackrestClientName}, which
 * each server authorizes for the stanza: a client must hold a certificate of this cluster's CA.
 * Clusters from before this scheme kept every Pod's key in Secret {@link names.pgbackrestTls}
 * ({@link PGBACKREST_TLS_KEY}); the operator keeps it for the Pods whose agent publishes no key,
 * and deletes it once every Pod has its own.
 *
 * A clone of the cluster's volume repo reads it through the repo host's read-only clone port
 * (contract/clone-gateway.ts), never through pgBackRest's server, which would let it write.
 *
 * Paths: pgBackRest passes the client's repo and pg paths to the remote, and the remote reads the
 * configuration file the client names. Each agent therefore publishes, on its own Pod (annotation
 * {@link ANNOTATION_PGBACKREST_SERVER}), where its server's configuration and data live, as paths
 * its own host sees them (a process node maps container paths to local directories).
 */
import { z } from 'zod';
import { GROUP } from './names.js';

/** pgBackRest's TLS server port (its default, and PGO's). */
export const PGBACKREST_SERVER_PORT = 8432;

/** Label on the repo host Pod (and its repo volumes): `true`. */
export const REPO_HOST_LABEL = `${GROUP}/repo-host`;

/** Where the repo host mounts a volume repo (PGO's path). */
export function repoVolumePath(repo: string): string {
  return `/pgbackrest/${repo}`;
}

/** Keys of the Secret names.pgbackrestTls(cluster), which clusters from before per-Pod keys have. */
export const PGBACKREST_TLS_KEY = {
  ca: 'ca.crt',
  cert: (pod: string) => `${pod}.crt`,
  key: (pod: string) => `${pod}.key`,
} as const;

/** Keys of the CA Secret names.pgbackrestCa(cluster) (read by the operator only). */
export const PGBACKREST_CA_KEY = { cert: 'ca.crt', key: 'ca.key' } as const;

/**
 * The common name of every pgBackRest certificate of a cluster, which its servers authorize.
 *
 * @example
 * ```ts
 * pgbackrestClientName('hippo'); // 'pgbackrest@hippo'
 * ```
 */
export function pgbackrestClientName(cluster: string): string {
  return `pgbackrest@${cluster}`;
}

/**
 * Pod annotation, written by the Pod's agent: the public half (SPKI PEM) of the Pod's own
 * pgBackRest key, which the operator certifies. Its presence also says the agent takes its
 * certificate from {@link ANNOTATION_PGBACKREST_CERTIFICATE}, never from names.pgbackrestTls.
 */
export const ANNOTATION_PGBACKREST_KEY = `${GROUP}/pgbackrest-key`;

/**
 * Pod annotation, written by the operator only: the certificate it issued for the Pod's published
 * key and IP, then the issuing CA's, PEM (contract/postgres-tls.ts splitPeerCertificate reads it).
 */
export const ANNOTATION_PGBACKREST_CERTIFICATE = `${GROUP}/pgbackrest-certificate`;

/** Pod annotation: JSON {@link PgBackRestServerInfo}, written by the agent once its server runs. */
export const ANNOTATION_PGBACKREST_SERVER = `${GROUP}/pgbackrest-server`;

const serverInfo = z.object({
  /** The configuration file the server's remote commands read. */
  config: z.string().min(1),
  /** An instance: PGDATA, postgres's socket directory and port. */
  pgPath: z.string().optional(),
  socketPath: z.string().optional(),
  port: z.number().int().optional(),
  /** The repo host: where each volume repo lives, by repo name. */
  repoPaths: z.record(z.string(), z.string()).optional(),
});

/** Where one Pod's pgBackRest server keeps its configuration and data, as that Pod sees them. */
export type PgBackRestServerInfo = z.infer<typeof serverInfo>;

/**
 * The Pod's server info, or undefined when it has none (or a malformed one).
 *
 * @example
 * ```ts
 * readServerInfo({ metadata: { annotations: { [ANNOTATION_PGBACKREST_SERVER]: '{"config":"/run/pgbackrest-server.conf"}' } } });
 * // { config: '/run/pgbackrest-server.conf' }
 * ```
 */
export function readServerInfo(pod: { metadata?: { annotations?: Record<string, string> } } | undefined) {
  const raw = pod?.metadata?.annotations?.[ANNOTATION_PGBACKREST_SERVER];
  if (!raw) return undefined;
  try {
    const parsed = serverInfo.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the spec declares a volume repo, and so a repo host runs (and runs the backups). */
export function hasVolumeRepo(spec: { readonly repos: readonly { readonly volume?: unknown }[] } | undefined) {
  return spec?.repos.some((repo) => repo.volume !== undefined) ?? false;
}
