/**
 * PostgreSQL's programs are where `PG_BIN` says, and nowhere else: a guessed directory could hold
 * another major than the data, so the agent refuses to start instead (config.ts requires PG_BIN).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `dir` when it holds `postgres`; throws naming PG_BIN otherwise.
 *
 * @example
 * ```ts
 * const bin = checkPgBin(config.pgBin); // '/usr/lib/postgresql/16/bin' in Kanri's image for 16
 * ```
 */
export function checkPgBin(dir: string): string {
  if (!existsSync(join(dir, 'postgres')))
    throw new Error(
      `PG_BIN=${dir} holds no postgres program: set PG_BIN to the bin directory of the PostgreSQL the image runs`,
    );
  return dir;
}
