/**
 * Whether a request to the clone port (clone-gateway.ts) comes from a clone Pod the operator
 * granted read access (contract/clone-gateway.ts): its bearer token must be the one derived from
 * this repo host's key and the key of a grant whose certificate is this cluster CA's, current,
 * and names that Pod. Pure apart from the key agreement.
 */
import { timingSafeEqual, X509Certificate } from 'node:crypto';
import { CLONE_COMMON_NAME, type CloneGrant, cloneToken } from '../../contract/index.js';
import type { PgBackRestKey } from '../backups/pgbackrest-key.js';

/** Why a grant's certificate does not hold now, or undefined when it does. */
export function grantProblem(pod: string, grant: CloneGrant, caPem: string, now: Date): string | undefined {
  try {
    const cert = new X509Certificate(grant.certificate);
    if (!cert.verify(new X509Certificate(caPem).publicKey)) return 'not issued by this cluster’s CA';
    if (cert.subject !== `CN=${CLONE_COMMON_NAME}`) return `its subject is ${cert.subject}`;
    if (!(cert.subjectAltName ?? '').split(', ').includes(`DNS:${pod}`)) return `it does not name ${pod}`;
    if (Date.parse(cert.validFrom) > now.getTime()) return 'not valid yet';
    if (Date.parse(cert.validTo) <= now.getTime()) return `expired ${cert.validTo}`;
  } catch {
    return 'unreadable';
  }
  return undefined;
}

/**
 * The clone Pod the request's `Authorization: Bearer <token>` stands for, or why it is refused.
 *
 * @example
 * ```ts
 * const who = authorizeClone(req.headers.authorization, grants, caPem, key);
 * if ('refused' in who) refuse(res, 403, who.refused);
 * ```
 */
export function authorizeClone(
  authorization: string | undefined,
  grants: ReadonlyMap<string, CloneGrant>,
  caPem: string | undefined,
  key: Pick<PgBackRestKey, 'agree'>,
  now: Date = new Date(),
): { pod: string } | { refused: string } {
  const presented = /^Bearer (\S+)$/.exec(authorization?.trim() ?? '')?.[1];
  if (!presented) return { refused: 'no bearer token' };
  if (!caPem) return { refused: 'this repo host has no certificate yet' };
  const given = Buffer.from(presented);
  for (const [pod, grant] of grants) {
    if (grantProblem(pod, grant, caPem, now)) continue;
    let expected: Buffer;
    try {
      expected = Buffer.from(cloneToken(key.agree(new X509Certificate(grant.certificate).publicKey), pod));
    } catch {
      continue; // a key that agrees with none of ours
    }
    if (expected.length === given.length && timingSafeEqual(expected, given)) return { pod };
  }
  return { refused: 'no current grant for this token' };
}
