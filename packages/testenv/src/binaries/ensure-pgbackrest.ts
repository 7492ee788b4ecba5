/**
 * Finds or fetches the pinned pgBackRest: Debian 13's binary package, downloaded through a private
 * apt configuration under the Kanri cache (the machine's own apt sources are never touched),
 * checked against its pinned SHA-256 and unpacked into `<cache>/pgbackrest-<version>/bin`.
 * Same lock, scratch directory and completion marker as the Go-built binaries (`fillCacheEntry`).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BinaryBuildError } from '../errors.js';
import { pgBackRestPackage } from '../versions.js';
import { type DebianPackagePin, planAptFetch } from './apt-fetch-plan.js';
import { type ProgressListener, streamProgressReporter } from './build-progress.js';
import { cacheRoot } from './cache-dir.js';
import { type CacheEntry, entryBinDir, fetchOnce } from './cache-entry.js';
import { runTool, type ToolOptions } from './run-tool.js';

export interface EnsurePgBackRestOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /** Receives fetch progress; defaults to lines on stderr. */
  readonly onProgress?: ProgressListener;
  /** The package to fetch; tests pass another pin to see a checksum mismatch refused. */
  readonly pin?: DebianPackagePin;
}

const MISSING_TOOL_HINT =
  'pgBackRest is fetched as a Debian package: install apt and dpkg (Debian or Ubuntu; `apt-get` and `dpkg-deb`)';

function tool(command: string, args: readonly string[], options: ToolOptions = {}): Promise<string> {
  return runTool('pgbackrest', MISSING_TOOL_HINT, command, args, options);
}

async function fetchInto(pin: DebianPackagePin, aptDir: string, scratch: string): Promise<void> {
  const plan = planAptFetch(pin, aptDir, join(scratch, 'download'));
  for (const dir of plan.dirs) await mkdir(dir, { recursive: true });
  for (const [file, content] of Object.entries(plan.files)) await writeFile(file, content);
  await tool('apt-get', plan.update.args, plan.update);
  await tool('apt-get', plan.download.args, plan.download);
  const sha256 = createHash('sha256')
    .update(await readFile(plan.debFile))
    .digest('hex');
  if (sha256 !== pin.sha256) {
    throw new BinaryBuildError(
      'pgbackrest',
      `pgbackrest: ${plan.debFile} has SHA-256 ${sha256}, not the pinned ${pin.sha256}; refusing to run it`,
    );
  }
  const unpacked = join(scratch, 'root');
  await tool('dpkg-deb', ['-x', plan.debFile, unpacked]);
  await rename(join(unpacked, 'usr', 'bin', pin.name), join(scratch, pin.name));
  await rm(unpacked, { recursive: true, force: true });
  await rm(plan.debFile, { force: true });
  // A binary whose shared libraries do not resolve here must fail now, not in the middle of a backup test.
  const version = await tool(join(scratch, pin.name), ['version']);
  if (version.trim() !== `pgBackRest ${pin.version}`) {
    throw new BinaryBuildError('pgbackrest', `pgbackrest: \`pgbackrest version\` printed ${JSON.stringify(version)}`);
  }
}

/**
 * Returns the path of the pinned pgBackRest (2.55.1, from Debian 13), fetching it on first use
 * (a few seconds: a 10 MB package index and a 0.5 MB .deb). Needs `apt-get` and `dpkg-deb`.
 * The binary sits under the cache, which another OS user may not read: pass it through
 * `runnableFileAs` before running it as `postgres`.
 *
 * @example
 * ```ts
 * const pgbackrest = await ensurePgBackRest();
 * execFileSync(pgbackrest, ['version']); // pgBackRest 2.55.1
 * ```
 */
export async function ensurePgBackRest(options: EnsurePgBackRestOptions = {}): Promise<string> {
  const root = options.cacheDir ?? cacheRoot();
  const pin = options.pin ?? pgBackRestPackage;
  const entry: CacheEntry = {
    name: pin.name,
    version: pin.version,
    dir: join(root, `${pin.name}-${pin.version}`),
    binaries: [pin.name],
  };
  // apt's lists are shared between fetches of this suite; apt locks them itself.
  await fetchOnce(
    entry,
    pin.version,
    (scratch) => fetchInto(pin, join(root, `apt-${pin.suite}`), scratch),
    options.onProgress ?? streamProgressReporter(),
  );
  return join(entryBinDir(entry), pin.name);
}
