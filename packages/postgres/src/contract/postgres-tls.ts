/**
 * PostgreSQL's TLS, as the operator issues it and the agent uses it. One Secret per cluster
 * (names.postgresTls) holds everything an instance needs:
 * - the server certificate every instance presents, for the cluster's Service names (clients use
 *   `sslmode=verify-full` against `ca.crt`), from the cluster's CA or from the user's own Secret;
 * - the replication user's client certificate (common name {@link REPLICATION_USER}) from the
 *   cluster's CA, with which replicas authenticate (`hostssl ... cert`) instead of a password;
 * - that CA, which postgres trusts for client certificates;
 * - the agents' peer certificate (common name {@link peerCommonName}), with which they serve and
 *   call the peer API over mutual TLS: only a holder of the cluster's Secret is a peer;
 * - the agents' superuser certificate (common name postgres): with spec.enableSuperuserAccess off
 *   (the default) pg_hba refuses the superuser's password from the network, and pg_rewind reaches
 *   the new primary with this certificate instead.
 * The CA's key stays in names.postgresCa, which only the operator reads.
 */
import { REPLICATION_USER } from './names.js';

/** Keys of the names.postgresTls Secret. `ca.crt`, `tls.crt` and `tls.key` as in a kubernetes.io/tls Secret. */
export const POSTGRES_TLS_KEY = {
  /** What clients verify the server with: the cluster's CA, or the user Secret's `ca.crt`. */
  serverCa: 'ca.crt',
  serverCert: 'tls.crt',
  serverKey: 'tls.key',
  /** The cluster's CA: postgres verifies client certificates (the replication user's) with it. */
  clientCa: 'client-ca.crt',
  replicationCert: 'replication.crt',
  replicationKey: 'replication.key',
  peerCert: 'peer.crt',
  peerKey: 'peer.key',
  /** The agents' superuser certificate (CN postgres): pg_rewind's way in when the password is refused from the network. */
  superuserCert: 'superuser.crt',
  superuserKey: 'superuser.key',
} as const;

/**
 * The files the agent writes from the Secret (mode 0600, in its run volume) for postgres and libpq.
 * The peer certificate is not among them: the peer API takes it from the Secret in memory.
 */
export interface PostgresTlsFiles {
  readonly serverCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCa: string;
  readonly replicationCert: string;
  readonly replicationKey: string;
  readonly superuserCert: string;
  readonly superuserKey: string;
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

/** The common name of the replication user's client certificate (`cert` authentication maps it to the role). */
export const REPLICATION_CERT_COMMON_NAME = REPLICATION_USER;

/**
 * The common name of a cluster's peer certificate: an agent answers, and believes, only a peer
 * presenting it, from the cluster's CA.
 *
 * @example
 * ```ts
 * peerCommonName('hippo'); // 'peer@hippo'
 * ```
 */
export function peerCommonName(cluster: string): string {
  return `peer@${cluster}`;
}
