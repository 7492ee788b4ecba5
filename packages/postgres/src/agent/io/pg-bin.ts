/** Finds PostgreSQL's programs: `PG_BIN`, else Debian's PostgreSQL 15 directory, else `pg_config --bindir`. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Where Debian and Ubuntu install PostgreSQL 15's programs. */
export const DEFAULT_PG_BIN = '/usr/lib/postgresql/15/bin';

/**
 * The directory that holds `postgres`, `initdb` and `pg_basebackup`.
 *
 * @example
 * ```ts
 * const bin = findPgBin(process.env.PG_BIN); // '/usr/lib/postgresql/15/bin' on Debian
 * ```
 */
export function findPgBin(configured: string | undefined): string {
  if (configured) {
    if (!existsSync(join(configured, 'postgres'))) throw new Error(`PG_BIN=${configured} holds no postgres program`);
    return configured;
  }
  if (existsSync(join(DEFAULT_PG_BIN, 'postgres'))) return DEFAULT_PG_BIN;
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (dir && existsSync(join(dir, 'postgres'))) return dir;
  } catch {
    // No pg_config on PATH: fall through to the error that says what was tried.
  }
  throw new Error(`cannot find PostgreSQL's programs: set PG_BIN (tried ${DEFAULT_PG_BIN} and pg_config --bindir)`);
}
