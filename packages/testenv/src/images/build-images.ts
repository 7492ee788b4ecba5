/**
 * Builds a project's own Dockerfiles into OCI archives real nodes import: the base image first
 * (`node:20-bookworm-slim`, see node-base-image.ts), then each Dockerfile as it is written, by
 * buildah. There is no second recipe beside a Dockerfile: what runs on real nodes is what the
 * Dockerfile says.
 *
 * Guarantees: an unchanged Dockerfile and context reuse every cached layer and the archive already
 * written for that image ID; builds on one machine run one at a time.
 */
import { createHash } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheRoot } from '../binaries/cache-dir.js';
import type { BuildSpec } from './buildah-plan.js';
import { ImageBuilder } from './image-builder.js';
import { ensureNodeBaseImage } from './node-base-image.js';

/** One image to build: a Dockerfile, its context, the name, and optionally a stage and arguments. */
export type ImageBuild = Omit<BuildSpec, 'trustStore' | 'labels'>;

/** A built image and the archive that holds it. */
export interface BuiltImage {
  readonly tag: string;
  /** The image ID (config digest). */
  readonly id: string;
  /** An OCI archive naming the image `tag`: for `realNodes.imageArchives`. */
  readonly archive: string;
  /** Size of the archive in bytes. */
  readonly bytes: number;
  /** How long building and exporting took, in milliseconds. */
  readonly ms: number;
}

export interface BuildImagesOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /**
   * Each line buildah prints. By default, its step lines (`STEP 4/11: RUN …`, and whether a
   * layer came from the cache) go to stderr: a cold build takes minutes.
   */
  readonly onOutput?: (line: string) => void;
}

/** Longest step line printed: a RUN step's command can run to hundreds of characters. */
const STEP_LINE_CHARS = 120;

/** The default progress: buildah's step and cache lines on stderr, shortened. */
function stepReporter(line: string): void {
  if (!/STEP \d+\/\d+|Using cache|Successfully tagged/.test(line)) return;
  const short = line.length > STEP_LINE_CHARS ? `${line.slice(0, STEP_LINE_CHARS - 1)}…` : line;
  process.stderr.write(`kanri testenv: image build: ${short}\n`);
}

/**
 * A file name for `tag`'s archives: the tag with anything but letters, digits, `.`, `_` and `-`
 * replaced. Pure.
 *
 * @example
 * ```ts
 * archiveStem('ghcr.io/kanri-dev/postgres:15'); // 'ghcr.io_kanri-dev_postgres_15'
 * ```
 */
export function archiveStem(tag: string): string {
  return tag.replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * The archive of `images` under `name`, version `id`: reused when it exists, else exported. Only
 * the newest archive of a name is kept: each is a few hundred MB.
 */
async function ensureArchive(
  builder: ImageBuilder,
  archives: string,
  name: string,
  id: string,
  images: readonly string[],
): Promise<{ archive: string; bytes: number }> {
  const stem = archiveStem(name);
  const archive = join(archives, `${stem}-${id.slice(0, 12)}.oci.tar`);
  const kept = await stat(archive).then(
    (s) => s.size,
    () => undefined,
  );
  if (kept !== undefined) return { archive, bytes: kept };
  await builder.exportArchive(images, archive);
  for (const file of await readdir(archives)) {
    if (file.startsWith(`${stem}-`) && join(archives, file) !== archive)
      await rm(join(archives, file), { force: true });
  }
  return { archive, bytes: (await stat(archive)).size };
}

/**
 * Builds every image of `builds`, in order, and returns each with its archive.
 *
 * @example
 * ```ts
 * const [operator] = await buildImages([
 *   { dockerfile: '/repo/Dockerfile', context: '/repo', tag: 'example.com/op:dev', target: 'operator' },
 * ]);
 * await startControlPlane({ realNodes: { count: 1, imageArchives: [operator.archive] } });
 * ```
 */
export async function buildImages(
  builds: readonly ImageBuild[],
  options: BuildImagesOptions = {},
): Promise<BuiltImage[]> {
  const root = options.cacheDir ?? cacheRoot();
  const builder = await ImageBuilder.create({
    cacheDir: root,
    onOutput: options.onOutput ?? stepReporter,
  });
  const archives = join(root, 'images');
  return builder.exclusively(async () => {
    await ensureNodeBaseImage(builder, { cacheDir: root });
    const built: BuiltImage[] = [];
    for (const build of builds) {
      const started = performance.now();
      const id = await builder.build(build);
      const { archive, bytes } = await ensureArchive(builder, archives, build.tag, id, [build.tag]);
      built.push({ tag: build.tag, id, archive, bytes, ms: Math.round(performance.now() - started) });
    }
    return built;
  });
}

/** Images built into one archive: every tag of `buildImageSet`. */
export interface BuiltImageSet {
  readonly tags: readonly string[];
  /** An OCI archive naming every tag, their shared layers stored once: for `realNodes.imageArchives`. */
  readonly archive: string;
  readonly bytes: number;
  /** How long building and exporting took, in milliseconds. */
  readonly ms: number;
}

/**
 * Builds every image of `builds` and writes them into one archive, for images that share most of
 * their layers (the tags of one Dockerfile that differ in a last step): one import per node
 * instead of one per tag, and the shared layers on disk once. The archive is reused while every
 * image ID is unchanged; `name` names it.
 *
 * @example
 * ```ts
 * const set = await buildImageSet('ghcr.io_kanri-dev_postgres_all-majors', postgresImageBuilds('ghcr.io/kanri-dev/postgres', dockerfile, repo));
 * await startControlPlane({ realNodes: { count: 3, imageArchives: [set.archive] } });
 * ```
 */
export async function buildImageSet(
  name: string,
  builds: readonly ImageBuild[],
  options: BuildImagesOptions = {},
): Promise<BuiltImageSet> {
  const root = options.cacheDir ?? cacheRoot();
  const builder = await ImageBuilder.create({ cacheDir: root, onOutput: options.onOutput ?? stepReporter });
  const archives = join(root, 'images');
  return builder.exclusively(async () => {
    await ensureNodeBaseImage(builder, { cacheDir: root });
    const started = performance.now();
    const ids: string[] = [];
    for (const build of builds) ids.push(await builder.build(build));
    const key = createHash('sha256')
      .update(builds.map((b, i) => `${b.tag}=${ids[i]}`).join('\n'))
      .digest('hex');
    const tags = builds.map((b) => b.tag);
    const { archive, bytes } = await ensureArchive(builder, archives, name, key, tags);
    return { tags, archive, bytes, ms: Math.round(performance.now() - started) };
  });
}
