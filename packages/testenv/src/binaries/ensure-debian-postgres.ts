/**
 * Finds or fetches one of Debian's own PostgreSQL builds of another minor than the machine's
 * (`debianPostgresBuilds`): its server and client packages, downloaded through a private apt
 * configuration under the Kanri cache (the machine's apt sources are never touched), each checked
 * against its pinned SHA-256, and unpacked as Debian lays them out into
 * `<cache>/postgresql-debian-<version>/usr`. `bin` links to `usr/lib/postgresql/<major>/bin`:
 * postgres finds its `lib` and `share` relative to where its program really is, so the tree works
 * where it lies.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BinaryBuildError } from '../errors.js';
import { debianPostgresBuilds } from '../versions.js';
import { type DebianPackagePin, planAptFetch } from './apt-fetch-plan.js';
import { type ProgressListener, streamProgressReporter } from './build-progress.js';
import { cacheRoot } from './cache-dir.js';
import { type CacheEntry, entryBinDir, fetchOnce } from './cache-entry.js';
import { runTool } from './run-tool.js';

/** A tag of {@link debianPostgresBuilds}, e.g. `'15.20'`. */
export type DebianPostgresTag = keyof typeof debianPostgresBuilds;

const PROGRAMS = ['postgres', 'initdb', 'pg_ctl', 'pg_basebackup', 'pg_rewind', 'pg_upgrade', 'pg_controldata', 'psql'];

const MISSING_TOOL_HINT =
  "Debian's PostgreSQL packages are fetched with apt: install apt and dpkg (Debian or Ubuntu; `apt-get` and `dpkg-deb`)";

const tool = (command: string, args: readonly string[], options = {}) =>
  runTool('postgresql', MISSING_TOOL_HINT, command, args, options);

async function fetchInto(pins: readonly DebianPackagePin[], aptDir: string, scratch: string): Promise<void> {
  for (const [index, pin] of pins.entries()) {
    const plan = planAptFetch(pin, aptDir, join(scratch, 'download'));
    for (const dir of plan.dirs) await mkdir(dir, { recursive: true });
    for (const [file, content] of Object.entries(plan.files)) await writeFile(file, content);
    // One index for the suite serves every package of the build.
    if (index === 0) await tool('apt-get', plan.update.args, plan.update);
    await tool('apt-get', plan.download.args, plan.download);
    const sha256 = createHash('sha256')
      .update(await readFile(plan.debFile))
      .digest('hex');
    if (sha256 !== pin.sha256)
      throw new BinaryBuildError(
        'postgresql',
        `postgresql: ${plan.debFile} has SHA-256 ${sha256}, not the pinned ${pin.sha256}; refusing to run it`,
      );
    await tool('dpkg-deb', ['-x', plan.debFile, scratch]);
    await rm(plan.debFile, { force: true });
  }
  await rm(join(scratch, 'download'), { recursive: true, force: true });
  const major = pins[0]?.version.split('.')[0] ?? '';
  await symlink(join('usr', 'lib', 'postgresql', major, 'bin'), join(scratch, 'bin'));
  // A build whose libraries do not resolve here must fail now, not when a Pod starts.
  const printed = await tool(join(scratch, 'bin', 'postgres'), ['--version']);
  if (!printed.includes(`(PostgreSQL) ${pins[0]?.version}`))
    throw new BinaryBuildError('postgresql', `postgresql: \`postgres --version\` printed ${JSON.stringify(printed)}`);
}

/**
 * Returns the `bin` directory of Debian's PostgreSQL build for `tag`, fetching it on first use
 * (about 19 MB, a few seconds). The directory lies under the cache, which another OS user may not
 * read: pass it through `runnableDirAs` before running it as `postgres`.
 *
 * @example
 * ```ts
 * const bin = await ensureDebianPostgres('15.20');
 * execFileSync(join(bin, 'postgres'), ['--version']); // postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)
 * ```
 */
export async function ensureDebianPostgres(
  tag: DebianPostgresTag,
  options: { readonly cacheDir?: string; readonly onProgress?: ProgressListener } = {},
): Promise<string> {
  const root = options.cacheDir ?? cacheRoot();
  const build = debianPostgresBuilds[tag];
  const entry: CacheEntry = {
    name: 'postgresql',
    version: `debian-${build.version}`,
    dir: join(root, `postgresql-debian-${build.version}`),
    binaries: PROGRAMS,
    trees: ['bin', 'usr'],
  };
  await fetchOnce(
    entry,
    build.version,
    (scratch) => fetchInto(build.packages, join(root, `apt-${build.packages[0].suite}`), scratch),
    options.onProgress ?? streamProgressReporter(),
  );
  return entryBinDir(entry);
}
