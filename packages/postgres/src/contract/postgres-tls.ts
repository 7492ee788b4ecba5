/**
 * PostgreSQL's TLS, as the operator issues it and the agent uses it. One Secret per cluster
 * (names.postgresTls) holds everything an instance needs:
 * - the server certificate every instance presents, for the cluster's Service names (clients use
 *   `sslmode=verify-full` against `ca.crt`), from the cluster's CA or from the user's own Secret;
 * - the replication user's client certificate (common name {@link REPLICATION_USER}) from the
 *   cluster's CA (or the user's, spec.tls.replicationSecret): the one credential with which a
 *   member reaches another's postgres (streaming, pg_basebackup, pg_rewind), over verify-full
 *   against {@link memberServerName};
 * - the CAs postgres trusts for client certificates: the cluster's, and the user's replication
 *   CA when one is named. pg_hba accepts a certificate for {@link REPLICATION_USER} alone, since
 *   it cannot tell which CA issued one (a shared issuer can name any role).
 * No certificate is a superuser's: the superuser logs in only over the Pod's own socket, and from
 * the network with its password when spec.enableSuperuserAccess allows it.
 * The CA's key stays in names.postgresCa, which only the operator reads. The same CA certifies
 * each agent's own key for the peer API (common name {@link peerCommonName}), on its Pod
 * (ANNOTATION.peerCertificate): that key is in no Secret, so an instance can present only itself.
 */
import { REPLICATION_USER } from './names.js';

/** Keys of the names.postgresTls Secret. `ca.crt`, `tls.crt` and `tls.key` as in a kubernetes.io/tls Secret. */
export const POSTGRES_TLS_KEY = {
  /** What clients verify the server with: the cluster's CA, or the user Secret's `ca.crt`. */
  serverCa: 'ca.crt',
  serverCert: 'tls.crt',
  serverKey: 'tls.key',
  /** The CAs postgres verifies client certificates (the replication user's) with. */
  clientCa: 'client-ca.crt',
  replicationCert: 'replication.crt',
  replicationKey: 'replication.key',
} as const;

/**
 * Keys agents before this version require in the Secret (without them they serve no TLS at all).
 * They held a superuser certificate; now they hold a copy of the replication user's pair, which
 * no pg_hba rule accepts for the superuser. Only the operator writes them; no agent reads them.
 */
export const LEGACY_POSTGRES_TLS_KEY = {
  superuserCert: 'superuser.crt',
  superuserKey: 'superuser.key',
} as const;

/**
 * The files the agent writes from the Secret (mode 0600, in its run volume) for postgres and libpq.
 */
export interface PostgresTlsFiles {
  readonly serverCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCa: string;
  readonly replicationCert: string;
  readonly replicationKey: string;
}

/**
 * The DNS names the server certificate carries: each Service of the cluster, short and qualified,
 * so `sslmode=verify-full` works with whichever name a client dials.
 *
 * @example
 * ```ts
 * postgresServerDnsNames('hippo', 'db').includes('hippo-primary.db.svc'); // true
 * ```
 */
export function postgresServerDnsNames(cluster: string, namespace: string): string[] {
  return ['primary', 'replicas', 'pods'].flatMap((suffix) => {
    const service = `${cluster}-${suffix}`;
    return [
      service,
      `${service}.${namespace}`,
      `${service}.${namespace}.svc`,
      `${service}.${namespace}.svc.cluster.local`,
    ];
  });
}

/**
 * The name a member checks another member's server certificate against (libpq's `host` beside
 * `hostaddr`, Node's `servername`): it dials a Pod IP, which no certificate names, and a name
 * qualified by the namespace is one only a server certified for this cluster carries (another
 * cluster's certificate from a shared CA names that cluster). Every issued server certificate
 * carries it (it is one of {@link postgresServerDnsNames}); a user's must.
 *
 * @example
 * ```ts
 * memberServerName('hippo', 'db'); // 'hippo-primary.db.svc'
 * ```
 */
export function memberServerName(cluster: string, namespace: string): string {
  return `${cluster}-primary.${namespace}.svc`;
}

/** The common name of the replication user's client certificate (`cert` authentication maps it to the role). */
export const REPLICATION_CERT_COMMON_NAME = REPLICATION_USER;

/**
 * The common name of an instance's peer certificate: an agent answers only callers presenting
 * one of its cluster's, from the cluster's CA, and believes a peer only when the name is that of
 * the instance it dialled.
 *
 * @example
 * ```ts
 * peerCommonName('hippo', 'hippo-i-0'); // 'peer@hippo/hippo-i-0'
 * ```
 */
export function peerCommonName(cluster: string, instance: string): string {
  return `peer@${cluster}/${instance}`;
}

/**
 * The instance a peer certificate's common name names, if it is one of `cluster`'s.
 *
 * @example
 * ```ts
 * peerInstanceOf('hippo', 'peer@hippo/hippo-i-0'); // 'hippo-i-0'
 * peerInstanceOf('hippo', 'peer@other/other-i-0'); // undefined
 * ```
 */
export function peerInstanceOf(cluster: string, commonName: string | undefined): string | undefined {
  const prefix = `peer@${cluster}/`;
  const instance = commonName?.startsWith(prefix) ? commonName.slice(prefix.length) : '';
  return /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(instance) ? instance : undefined;
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The instance's certificate and the CA's, PEM each, from its ANNOTATION.peerCertificate.
 *
 * @example
 * ```ts
 * const { cert, ca } = splitPeerCertificate(pod.metadata?.annotations?.[ANNOTATION.peerCertificate]);
 * ```
 */
export function splitPeerCertificate(value: string | undefined): { cert?: string; ca?: string } {
  const [cert, ca] = value?.match(CERTIFICATE) ?? [];
  return { ...(cert ? { cert: `${cert}\n` } : {}), ...(ca ? { ca: `${ca}\n` } : {}) };
}
