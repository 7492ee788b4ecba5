/**
 * SCRAM-SHA-256 verifiers computed here, so a password reaches postgres only as a salted hash: even
 * a `CREATE ROLE … PASSWORD` statement that ends up in postgres's log carries no usable secret.
 * The format is postgres's own (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, RFC 5803).
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

/** postgres's default `scram_iterations`. */
export const SCRAM_ITERATIONS = 4096;

/**
 * Postgres applies SASLprep to passwords and falls back to the raw bytes when that fails; NFKC is
 * the normalisation step of SASLprep and leaves ASCII (all generated passwords) untouched.
 */
function prepare(password: string): Buffer {
  return Buffer.from(password.normalize('NFKC'), 'utf8');
}

function keysFor(password: string, salt: Buffer, iterations: number) {
  const salted = pbkdf2Sync(prepare(password), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return { storedKey, serverKey };
}

/**
 * A verifier for `password` with a fresh random salt (or the given one).
 *
 * @example
 * ```ts
 * const verifier = buildScramVerifier('s3cret');
 * // ALTER ROLE app PASSWORD 'SCRAM-SHA-256$4096:…$…:…'
 * ```
 */
export function buildScramVerifier(
  password: string,
  salt: Buffer = randomBytes(16),
  iterations: number = SCRAM_ITERATIONS,
): string {
  const { storedKey, serverKey } = keysFor(password, salt, iterations);
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/**
 * True when `verifier` (as stored in pg_authid.rolpassword) was made from `password`. Lets the agent
 * leave an unchanged password alone instead of rewriting it with a new salt on every lap.
 */
export function scramVerifierMatches(verifier: string | null | undefined, password: string): boolean {
  const match = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(verifier ?? '');
  if (!match) return false;
  const [, iterations, salt, stored, server] = match as unknown as [string, string, string, string, string];
  const keys = keysFor(password, Buffer.from(salt, 'base64'), Number(iterations));
  const storedKey = Buffer.from(stored, 'base64');
  const serverKey = Buffer.from(server, 'base64');
  return (
    storedKey.length === keys.storedKey.length &&
    serverKey.length === keys.serverKey.length &&
    timingSafeEqual(storedKey, keys.storedKey) &&
    timingSafeEqual(serverKey, keys.serverKey)
  );
}
