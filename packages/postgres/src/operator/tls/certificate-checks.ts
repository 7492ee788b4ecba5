/**
 * The checks every certificate the operator keeps goes through, whoever it is for (PostgreSQL's
 * TLS, the peer API, pgBackRest): is a CA Secret able to issue, does a key belong to its
 * certificate, how early to renew. Pure; here rather than beside one user so that tls/ and
 * backups/ both import it and neither imports the other's plans.
 */
import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { PGBACKREST_CA_KEY } from '../../contract/index.js';

/** Renew a certificate (or the CA) when fewer days than this remain. */
export const RENEW_BEFORE_DAYS = 30;

/** The SPKI of a key, private or public, to tell whether a key belongs to a certificate. */
function publicKeyDer(key: KeyObject): Buffer {
  return (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' });
}

/**
 * Why `keyPem` cannot serve with `certificate` (unreadable, or another key's), or undefined.
 *
 * @example
 * ```ts
 * keyProblem(new X509Certificate(certPem), keyPem); // undefined when they belong together
 * ```
 */
export function keyProblem(certificate: X509Certificate, keyPem: string): string | undefined {
  try {
    if (!publicKeyDer(createPrivateKey(keyPem)).equals(publicKeyDer(certificate.publicKey))) {
      return 'the key does not match the certificate';
    }
  } catch {
    return 'the key is unreadable';
  }
  return undefined;
}

/**
 * Why the CA Secret's content cannot issue (missing, unreadable, not a CA, its key not its own,
 * expiring within {@link RENEW_BEFORE_DAYS}), or undefined when it can.
 *
 * @example
 * ```ts
 * certificateAuthorityProblem({}); // 'no CA yet'
 * ```
 */
export function certificateAuthorityProblem(
  data: Readonly<Record<string, string>>,
  now: Date = new Date(),
): string | undefined {
  const certPem = data[PGBACKREST_CA_KEY.cert];
  const keyPem = data[PGBACKREST_CA_KEY.key];
  if (!certPem || !keyPem) return 'no CA yet';
  try {
    const cert = new X509Certificate(certPem);
    if (!cert.ca) return 'the CA certificate is not a CA';
    if (Date.parse(cert.validTo) - now.getTime() < RENEW_BEFORE_DAYS * 86_400_000)
      return `the CA expires ${cert.validTo}`;
    if (!publicKeyDer(createPrivateKey(keyPem)).equals(publicKeyDer(cert.publicKey))) {
      return 'the CA key does not match its certificate';
    }
  } catch (error) {
    return `the CA is unreadable: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

/** A Secret's `data`, decoded from base64 (keys and PEM text). */
export function decodeSecretData(data: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}
