/**
 * Directories at predictable paths in a shared temp dir, which testenv (often root) may only
 * reuse when no other user could have put anything there: one it owns, that is no symbolic link,
 * and that nobody else may write to (a shared lock directory excepted, when it is sticky as /tmp is).
 */
import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { errnoCode } from './errno.js';
import { TestenvError } from './errors.js';

/** A path testenv refuses to reuse: another user could have planted what it holds. */
export class UntrustedPathError extends TestenvError {
  override name = 'UntrustedPathError';
}

/** What `lstat` says of a path: enough to judge it. */
export interface PathFacts {
  readonly isSymbolicLink: boolean;
  readonly isDirectory: boolean;
  readonly uid: number;
  readonly mode: number;
}

export interface TrustOptions {
  /**
   * A directory every user of the machine shares (lock files): it may be root's as well as ours,
   * and world-writable if sticky, so that nobody removes or replaces another user's entries.
   */
  readonly shared?: boolean;
}

/**
 * Why `path` must not be reused by the user `uid`, or undefined when it may be. Pure.
 *
 * @example
 * ```ts
 * untrustedReason('/tmp/x', { isSymbolicLink: false, isDirectory: true, uid: 1000, mode: 0o40755 }, 0);
 * // '/tmp/x is owned by uid 1000, not by this user (uid 0)'
 * ```
 */
export function untrustedReason(
  path: string,
  facts: PathFacts,
  uid: number,
  options: TrustOptions = {},
): string | undefined {
  if (facts.isSymbolicLink) return `${path} is a symbolic link`;
  if (!facts.isDirectory) return `${path} is not a directory`;
  const owners = options.shared ? [uid, 0] : [uid];
  if (!owners.includes(facts.uid)) return `${path} is owned by uid ${facts.uid}, not by this user (uid ${uid})`;
  const writableByOthers = facts.mode & 0o022;
  const sticky = (facts.mode & 0o1000) !== 0;
  if (writableByOthers && !(options.shared && sticky)) {
    const who = facts.mode & 0o002 ? 'every user' : 'its group';
    return `${path} is writable by ${who} (mode ${(facts.mode & 0o7777).toString(8).padStart(4, '0')})`;
  }
  return undefined;
}

/**
 * Creates directory `path` with `mode` unless it exists, then checks that it may be trusted
 * (`untrustedReason`), throwing UntrustedPathError that names the path, why, and what to do; a
 * trusted directory of this user's gets `mode`.
 *
 * @example
 * ```ts
 * ensureTrustedDirectory(join(tmpdir(), `kanri-stage-${process.getuid()}`), 0o711);
 * ```
 */
export function ensureTrustedDirectory(path: string, mode: number, options: TrustOptions = {}): void {
  try {
    mkdirSync(path, { mode });
  } catch (error) {
    if (errnoCode(error) !== 'EEXIST') throw error;
  }
  const uid = process.getuid?.();
  if (uid === undefined) return; // no POSIX owners to check (Windows)
  const stats = lstatSync(path);
  const reason = untrustedReason(
    path,
    { isSymbolicLink: stats.isSymbolicLink(), isDirectory: stats.isDirectory(), uid: stats.uid, mode: stats.mode },
    uid,
    options,
  );
  if (reason) {
    throw new UntrustedPathError(
      `${reason}: testenv does not reuse a path another user could have put something in. ` +
        `If it is yours and safe, remove it (rm -r ${path}) and testenv creates its own.`,
    );
  }
  // mkdir's mode is masked by the umask, and an older release may have made it otherwise. No one
  // else can swap it for a link meanwhile: it is this user's, in a sticky temp dir.
  if (stats.uid === uid) chmodSync(path, mode);
}
