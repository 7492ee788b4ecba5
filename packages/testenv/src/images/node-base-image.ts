/**
 * The base image Kanri's Dockerfiles name, `node:20-bookworm-slim`, built here because no registry
 * can serve it: packages/testenv/images/node-bookworm-slim/Dockerfile, on a context of Debian 12
 * minbase (mmdebstrap, from Debian's packages), Node's linux-x64 build and npm (both from the npm
 * registry, checked against their pinned integrity).
 *
 * Guarantees: the stored image carries a label with the digest of everything it was built from
 * (the pins and the Dockerfile), so a changed pin or Dockerfile rebuilds it and an unchanged one
 * never does; the context is a cache entry, filled once.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { streamProgressReporter } from '../binaries/build-progress.js';
import { cacheRoot } from '../binaries/cache-dir.js';
import { type CacheEntry, fetchOnce } from '../binaries/cache-entry.js';
import { BinaryBuildError } from '../errors.js';
import { type NpmPackagePin, nodeBaseImage } from '../versions.js';
import type { ImageBuilder } from './image-builder.js';

const run = promisify(execFile);

/** The label holding the digest the stored base image was built from. */
export const BASE_DIGEST_LABEL = 'dev.kanri.testenv.base-digest';

const NAME = 'node-base';

/** The Dockerfile, in the package's `images/` (three levels up from `dist/src/images/`). */
export const NODE_BASE_DOCKERFILE = fileURLToPath(
  new URL('../../../images/node-bookworm-slim/Dockerfile', import.meta.url),
);

/** A fixed creation time for the Debian tree (mmdebstrap's SOURCE_DATE_EPOCH): 2023-11-14. */
const SOURCE_DATE_EPOCH = '1700000000';

/**
 * The digest of what the base is built from: the pins and the Dockerfile's text. Pure.
 *
 * @example
 * ```ts
 * baseDigest(nodeBaseImage, 'FROM scratch\n…'); // 64 hex digits; another Dockerfile gives another
 * ```
 */
export function baseDigest(pins: typeof nodeBaseImage, dockerfile: string): string {
  return createHash('sha256').update(JSON.stringify(pins)).update('\0').update(dockerfile).digest('hex');
}

/** The `sha512-…` integrity string of `file`, as the npm registry states it. */
async function integrityOf(file: string): Promise<string> {
  return `sha512-${createHash('sha512')
    .update(await readFile(file))
    .digest('base64')}`;
}

/** Fetches `pin` with `npm pack` into `dir`, checks its integrity, and unpacks it to `dir/package`. */
async function fetchNpmPackage(pin: NpmPackagePin, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const { stdout } = await run('npm', ['pack', `${pin.name}@${pin.version}`, '--pack-destination', dir, '--json'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  const tarball = join(dir, packed?.filename ?? '');
  const integrity = await integrityOf(tarball);
  if (integrity !== pin.integrity) {
    throw new BinaryBuildError(
      NAME,
      `${NAME}: ${pin.name}@${pin.version} from the npm registry has integrity ${integrity}, not the pinned ${pin.integrity}; refusing it`,
    );
  }
  await run('tar', ['-xzf', tarball, '-C', dir]);
  return join(dir, 'package');
}

/** Writes the build context (rootfs.tar, node, npm/, Dockerfile) into `context`. */
async function writeContext(builder: ImageBuilder, pins: typeof nodeBaseImage, context: string, scratch: string) {
  await mkdir(context, { recursive: true });
  const { tools } = builder;
  const { debian } = pins;
  try {
    await run(
      join(tools.binDir, 'mmdebstrap'),
      [
        '--variant=minbase',
        '--mode=root',
        `--include=${debian.include.join(',')}`,
        '--aptopt=Acquire::Languages "none"',
        // As debian:bookworm-slim: no documentation, manual pages or translations.
        '--dpkgopt=path-exclude=/usr/share/doc/*',
        '--dpkgopt=path-exclude=/usr/share/man/*',
        '--dpkgopt=path-exclude=/usr/share/locale/*',
        debian.suite,
        join(context, 'rootfs.tar'),
        debian.mirror,
      ],
      {
        // The machine's APT_CONFIG must not leak in: mmdebstrap configures its own apt.
        env: { ...process.env, ...tools.env, APT_CONFIG: '', SOURCE_DATE_EPOCH },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
  } catch (error) {
    const output = error instanceof Error && 'stderr' in error ? String(error.stderr) : '';
    throw new BinaryBuildError(
      NAME,
      `${NAME}: mmdebstrap could not build Debian ${debian.suite}`,
      output.slice(-4000),
      {
        cause: error,
      },
    );
  }
  const node = await fetchNpmPackage(pins.node, join(scratch, 'node'));
  await rename(join(node, 'bin', 'node'), join(context, 'node'));
  await rename(await fetchNpmPackage(pins.npm, join(scratch, 'npm')), join(context, 'npm'));
  await copyFile(NODE_BASE_DOCKERFILE, join(context, 'Dockerfile'));
}

export interface NodeBaseImageOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
}

/**
 * Makes sure buildah's storage holds `node:20-bookworm-slim` built from the current pins, and
 * returns its name. Cold: about 45 s for Debian and 15 s for the build; warm: one `buildah inspect`.
 * Call it holding the builder's lock (`builder.exclusively`).
 *
 * @example
 * ```ts
 * const builder = await ImageBuilder.create();
 * await builder.exclusively(() => ensureNodeBaseImage(builder)); // 'docker.io/library/node:20-bookworm-slim'
 * ```
 */
export async function ensureNodeBaseImage(builder: ImageBuilder, options: NodeBaseImageOptions = {}): Promise<string> {
  const pins = nodeBaseImage;
  const digest = baseDigest(pins, await readFile(NODE_BASE_DOCKERFILE, 'utf8'));
  const stored = await builder.inspect(pins.tag);
  if (stored?.labels[BASE_DIGEST_LABEL] === digest) return pins.tag;
  const version = `${pins.node.version}-${digest.slice(0, 12)}`;
  const entry: CacheEntry = {
    name: NAME,
    version,
    dir: join(options.cacheDir ?? cacheRoot(), `${NAME}-${version}`),
    binaries: [],
    trees: ['context'],
  };
  await fetchOnce(
    entry,
    version,
    (scratch) => writeContext(builder, pins, join(scratch, 'context'), scratch),
    streamProgressReporter(),
  );
  const context = join(entry.dir, 'context');
  await builder.build({
    dockerfile: join(context, 'Dockerfile'),
    context,
    tag: pins.tag,
    buildArgs: { NODE_VERSION: pins.node.version },
    labels: { [BASE_DIGEST_LABEL]: digest },
  });
  return pins.tag;
}
