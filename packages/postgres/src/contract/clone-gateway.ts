/**
 * How a clone reads another cluster's volume repo: never through that cluster's pgBackRest TLS
 * server, whose remote protocol lets any client it authorizes write, expire and delete (pgBackRest
 * has no read-only client; the client even chooses the remote's repo path), but through the repo
 * host's clone port, a read-only subset of the Google Cloud Storage JSON API over the repo's files
 * (agent/repo-host/clone-gateway.ts), which pgBackRest reads as a `gcs` repo: object metadata,
 * listings and contents, nothing else.
 *
 * Access is a grant the operator writes on the source's repo host Pod for one clone Pod, while
 * that clone restores: a certificate from the source's pgBackRest CA for the key the clone Pod's
 * agent made and published, short-lived (renewed while the restore lasts), removed once the clone
 * has restored (or is gone). The clone authenticates with a token both sides derive from their own
 * keys (ECDH of the clone Pod's key and the repo host's, {@link cloneToken}): nothing secret is
 * written anywhere, and a grant that is removed or expired is refused at the next request.
 */
import { createHmac } from 'node:crypto';
import { GROUP } from './names.js';

/** The repo host's clone port (beside pgBackRest's 8432). */
export const PGBACKREST_CLONE_PORT = 8433;

/**
 * Prefix of the grant annotations on a repo host Pod, one per clone Pod:
 * `pgbackrest-clone.postgres.kanri.dev/<clone Pod>` = JSON {@link CloneGrant}. Written by the
 * operator only (the repo host's admission policy lets its agent write no other annotation).
 */
export const CLONE_GRANT_PREFIX = `pgbackrest-clone.${GROUP}/`;

/** Common name of a grant's certificate (not `pgbackrest@<cluster>`: no pgBackRest server admits it). */
export const CLONE_COMMON_NAME = 'pgbackrest-clone';

/** One grant, as the annotation's value. */
export interface CloneGrant {
  /** The clone PostgresCluster (in the repo host's namespace). */
  readonly cluster: string;
  /** From the source's pgBackRest CA, for the clone Pod's key, naming the Pod; PEM. */
  readonly certificate: string;
}

/** The grants on a repo host Pod's annotations, by clone Pod; malformed ones are left out. */
export function readCloneGrants(annotations: Readonly<Record<string, string>> | undefined): Map<string, CloneGrant> {
  const grants = new Map<string, CloneGrant>();
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (!key.startsWith(CLONE_GRANT_PREFIX)) continue;
    try {
      const grant = JSON.parse(value) as Partial<CloneGrant>;
      if (typeof grant.cluster === 'string' && typeof grant.certificate === 'string')
        grants.set(key.slice(CLONE_GRANT_PREFIX.length), { cluster: grant.cluster, certificate: grant.certificate });
    } catch {
      // Not a grant: refused like an absent one.
    }
  }
  return grants;
}

/**
 * The bearer token of `pod`'s grant, from the ECDH secret of the clone Pod's key and the repo
 * host's: the clone derives it with its private key and the repo host's certificate, the repo host
 * with its private key and the grant's certificate.
 *
 * @example
 * ```ts
 * cloneToken(key.agree(createPublicKey(repoHostCertPem)), 'copy-i-0'); // 43 base64url characters
 * ```
 */
export function cloneToken(sharedSecret: Buffer, pod: string): string {
  return createHmac('sha256', sharedSecret).update(`kanri pgbackrest clone read: ${pod}`).digest('base64url');
}

/** The `repoN-…` options that read a repo through a clone port, as pgBackRest's `gcs` repo type. */
export interface CloneGatewayAccess {
  /** The repo host's Pod IP. */
  readonly address: string;
  /** The CA that issued the repo host's certificate (the source cluster's pgBackRest CA), a file. */
  readonly caFile: string;
  readonly token: string;
}

/**
 * @example
 * ```ts
 * cloneGatewayOptions(1, 'repo1', { address: '10.0.0.9', caFile: '/run/source/ca.crt', token });
 * // { 'repo1-type': 'gcs', 'repo1-gcs-bucket': 'repo1', 'repo1-gcs-endpoint': '10.0.0.9:8433', … }
 * ```
 */
export function cloneGatewayOptions(index: number, repo: string, access: CloneGatewayAccess): Record<string, string> {
  const host = access.address.includes(':') ? `[${access.address}]` : access.address;
  return {
    [`repo${index}-type`]: 'gcs',
    [`repo${index}-gcs-bucket`]: repo,
    [`repo${index}-gcs-endpoint`]: `${host}:${PGBACKREST_CLONE_PORT}`,
    [`repo${index}-gcs-key-type`]: 'token',
    [`repo${index}-gcs-key`]: `Bearer ${access.token}`,
    [`repo${index}-storage-ca-file`]: access.caFile,
    [`repo${index}-storage-verify-tls`]: 'y',
    // The bucket is the repo's own volume: its root is the repo path.
    [`repo${index}-path`]: '/',
  };
}
