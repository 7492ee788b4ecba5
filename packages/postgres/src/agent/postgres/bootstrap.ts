/**
 * Creating PGDATA: initdb for a new cluster, pg_basebackup from the primary for a new replica.
 * Both build into a sibling temporary directory and rename it into place when complete, so a crash
 * part-way leaves no PGDATA (and the next start simply begins again), never a half-made one.
 */
import { existsSync } from 'node:fs';
import { readdir, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SUPERUSER } from '../../contract/index.js';
import { runCommand } from '../commands.js';
import { fsyncDir } from '../files.js';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';
import { type MemberTarget, memberConninfo, usesPassword } from '../plan/member-connection.js';
import { buildScramVerifier } from '../plan/users/scram.js';

export interface DataDirState {
  readonly hasData: boolean;
  readonly isStandby: boolean;
}

export class BootstrapError extends Error {
  override name = 'BootstrapError';
}

/**
 * What PGDATA holds. An empty PGDATA (no PG_VERSION) is removed so that bootstrap can start clean;
 * a non-empty one without PG_VERSION is not ours to delete, and is an error.
 */
export async function inspectDataDir(pgdata: string): Promise<DataDirState> {
  if (existsSync(join(pgdata, 'PG_VERSION')))
    return { hasData: true, isStandby: existsSync(join(pgdata, 'standby.signal')) };
  if (existsSync(pgdata)) {
    const entries = await readdir(pgdata);
    if (entries.length > 0)
      throw new BootstrapError(
        `${pgdata} is not empty but holds no PG_VERSION; refusing to touch it (${entries.slice(0, 5).join(', ')})`,
      );
    await rmdir(pgdata);
  }
  return { hasData: false, isStandby: false };
}

export interface BootstrapContext {
  readonly pgBin: string;
  readonly pgdata: string;
  /** Where the one-off password file goes (the run volume, never the data volume). */
  readonly runDir: string;
  readonly log: Logger;
  readonly redactor: Redactor;
  readonly signal?: AbortSignal;
}

async function intoPlace(temporary: string, pgdata: string): Promise<void> {
  await rename(temporary, pgdata);
  await fsyncDir(dirname(pgdata));
}

/**
 * The WAL segment size of a new cluster, in MiB (postgres's default is 16). A promotion copies the
 * old timeline's last segment (up to the point of the switch) into the new timeline's first, on the
 * path to the first write: with 16 MiB segments that copy took 20–93 ms in the failover benchmark,
 * with 4 MiB 8–63 ms. The cost is four times as many segments to archive (see the README).
 */
export const WAL_SEGMENT_MIB = 4;

/** initdb's `--wal-segsize` for a running or stopped cluster's segment size in bytes. */
export function walSegmentMiB(bytes: number): number {
  const mib = bytes / 2 ** 20;
  if (!Number.isInteger(mib) || mib < 1 || mib > 1024 || (mib & (mib - 1)) !== 0)
    throw new Error(`WAL segment size of ${bytes} bytes: expected a power of two from 1 to 1024 MiB`);
  return mib;
}

/**
 * initdb with data checksums and SCRAM; the superuser's password goes in as a SCRAM verifier through
 * a 0600 file that is removed at once, so the plain password never touches the disk. A major
 * upgrade passes the old cluster's segment size: pg_upgrade refuses clusters whose sizes differ.
 */
export async function initdb(
  context: BootstrapContext,
  superuserPassword: string,
  walSegmentMiB = WAL_SEGMENT_MIB,
): Promise<void> {
  const { pgBin, pgdata, runDir, log, redactor, signal } = context;
  const temporary = `${pgdata}.initdb`;
  const pwfile = join(runDir, 'initdb.pw');
  await rm(temporary, { recursive: true, force: true });
  await writeFile(pwfile, `${buildScramVerifier(superuserPassword)}\n`, { mode: 0o600 });
  try {
    log.info({ pgdata }, 'initdb: creating a new cluster');
    await runCommand(
      join(pgBin, 'initdb'),
      [
        '-D',
        temporary,
        '-U',
        SUPERUSER,
        `--pwfile=${pwfile}`,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '--data-checksums',
        `--wal-segsize=${walSegmentMiB}`,
        '--encoding=UTF8',
        '--locale=C',
        '--no-instructions',
      ],
      { log, redactor, signal },
    );
  } finally {
    await rm(pwfile, { force: true });
  }
  await intoPlace(temporary, pgdata);
}

/**
 * pg_basebackup from the primary through this replica's own slot (so WAL from the backup's start
 * is kept until it streams), then standby.signal. With the cluster's TLS files the primary must
 * prove the cluster's name and the replication certificate is the only credential
 * (member-connection.ts); without them the password goes in the environment only.
 */
export async function basebackup(
  context: BootstrapContext,
  source: {
    target: MemberTarget;
    slot: string;
    applicationName: string;
    replicationPassword: string;
  },
): Promise<void> {
  const { pgBin, pgdata, log, redactor, signal } = context;
  const temporary = `${pgdata}.basebackup`;
  await rm(temporary, { recursive: true, force: true });
  log.info({ from: source.target.ip, slot: source.slot }, 'pg_basebackup: cloning the primary');
  const conninfo = memberConninfo(source.target, [
    ['application_name', source.applicationName],
    ['connect_timeout', '10'],
  ]);
  try {
    await runCommand(
      join(pgBin, 'pg_basebackup'),
      ['--dbname', conninfo, '-D', temporary, '-X', 'stream', '-S', source.slot, '--checkpoint=fast', '--no-password'],
      {
        log,
        redactor,
        signal,
        env: {
          ...process.env,
          ...(usesPassword(source.target) ? { PGPASSWORD: source.replicationPassword } : {}),
        },
      },
    );
    await writeFile(join(temporary, 'standby.signal'), '', { mode: 0o600 });
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  await intoPlace(temporary, pgdata);
}
