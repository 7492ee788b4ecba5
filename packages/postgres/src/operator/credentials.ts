/**
 * The cluster's passwords: kept from the Secrets that hold them, generated only for a Secret the
 * API server says does not exist. A Secret missing from the operator's cache is not proof of
 * absence (the cache lags a create, and a label-filtered cache never holds a Secret the user made
 * without Kanri's labels), and a password generated then would be force-applied over the one the
 * running instances and applications use.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { isNotFound } from '@kanri/client';
import type { ReconcileContext } from '@kanri/runtime';
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { effectiveUsers, REPLICATION_USER, SUPERUSER } from '../contract/index.js';
import { type Credentials, secretNames } from './builders/secrets.js';
import { foreignOwner } from './ownership.js';

/** A user's `password.type` (PGO's): the characters a generated password is made of. */
export type PasswordType = 'ASCII' | 'AlphaNumeric';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Letters, digits and the punctuation that needs no quoting in a connection string's value or a shell's double quotes. */
const ASCII = `${ALPHANUMERIC}()*+,-./:;<=>?@[]^_{|}`;

/** PGO's length for a password of a given type. */
const TYPED_LENGTH = 24;

/**
 * A new password: without `type`, 24 random bytes (192 bits), URL-safe so it needs no escaping in
 * a connection URI; with one, 24 characters drawn uniformly from its set, as PGO makes them
 * (AlphaNumeric: 143 bits; ASCII: 150 bits).
 *
 * @example
 * ```ts
 * generatePassword('AlphaNumeric'); // e.g. 'q3ZC8Lw0dUfa7Kx2RmPb9tYe'
 * ```
 */
export function generatePassword(type?: PasswordType): string {
  if (!type) return randomBytes(24).toString('base64url');
  const set = type === 'AlphaNumeric' ? ALPHANUMERIC : ASCII;
  return Array.from({ length: TYPED_LENGTH }, () => set[randomInt(set.length)]).join('');
}

function passwordIn(secret: Secret | undefined): string | undefined {
  const encoded = secret?.data?.password;
  return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : undefined;
}

/**
 * Credentials from the passwords found per user (undefined: the Secret does not exist), with
 * `generate` called for each missing one. Pure.
 *
 * @example
 * ```ts
 * planCredentials(cluster, new Map([['postgres', 'kept']]), generatePassword).superuser; // 'kept'
 * ```
 */
export function planCredentials(
  cluster: PostgresCluster,
  found: ReadonlyMap<string, string | undefined>,
  generate: (type?: PasswordType) => string,
): Credentials {
  const users: Record<string, string> = {};
  // A type shapes only a password generated now: one a Secret already holds is kept.
  for (const u of effectiveUsers(cluster.spec.users, cluster.metadata?.name ?? ''))
    users[u.name] = found.get(u.name) ?? generate(u.password?.type);
  return {
    superuser: found.get(SUPERUSER) ?? generate(),
    replication: found.get(REPLICATION_USER) ?? generate(),
    users,
  };
}

/**
 * Reads each credentials Secret from the cache, and from the API server when the cache has none.
 * Any error but NotFound fails the reconcile (retried with backoff) rather than generating. A
 * Secret that is not the cluster's (ownership.ts: another cluster's whose generated name is the
 * same, or one planted before the cluster) lends no password: the one generated in its place is
 * never written, since the guarded context refuses to apply over that Secret (ownership-guard.ts).
 */
export async function readCredentials(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'get' | 'client' | 'signal'>,
): Promise<Credentials> {
  const namespace = cluster.metadata?.namespace;
  const found = new Map<string, string | undefined>();
  for (const { name, user } of secretNames(cluster)) {
    const cached = ctx.get<Secret>('v1', 'Secret', name);
    const secret =
      cached ??
      (await ctx.client
        .resource<Secret & { metadata: object }>('v1', 'Secret')
        .get(name, { namespace, signal: ctx.signal })
        .catch((error: unknown) => {
          if (isNotFound(error)) return undefined;
          throw error;
        }));
    found.set(user, secret && foreignOwner(secret, cluster) === undefined ? passwordIn(secret) : undefined);
  }
  return planCredentials(cluster, found, generatePassword);
}
