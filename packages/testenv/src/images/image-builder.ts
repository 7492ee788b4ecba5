/**
 * Builds images from Dockerfiles with buildah (Debian 12's, fetched with the node tools), without a
 * registry or a container engine, and exports them as OCI archives that real nodes import.
 *
 * Guarantees: builds run one at a time on this machine (a lock beside the storage), since two
 * builds of one Dockerfile would both do the work the layer cache exists to save; an archive
 * appears under its final name only once written whole.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import lockfile from 'proper-lockfile';
import { cacheRoot } from '../binaries/cache-dir.js';
import { ensureNodeTools, type NodeTools } from '../binaries/ensure-node-tools.js';
import { BinaryBuildError } from '../errors.js';
import {
  type BuildahPaths,
  type BuildSpec,
  buildahConfigFiles,
  buildahEnv,
  buildahPaths,
  planBuild,
  planExport,
  planInspect,
} from './buildah-plan.js';

const execFileAsync = promisify(execFile);

/** An image in buildah's storage. */
export interface StoredImage {
  /** The image ID (its config digest, without `sha256:`). */
  readonly id: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface ImageBuilderOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /** Receives each line buildah prints while building; defaults to none. */
  readonly onOutput?: (line: string) => void;
}

/** How many of buildah's last output lines an error carries. */
const ERROR_TAIL_LINES = 40;

/** The CA bundle RUN steps trust: the one this Node process was told to add, else the system's. */
function trustStore(): string | undefined {
  for (const file of [process.env.NODE_EXTRA_CA_CERTS, process.env.SSL_CERT_FILE, '/etc/ssl/certs/ca-certificates.crt'])
    if (file && existsSync(file)) return file;
  return undefined;
}

/**
 * One machine's image builder.
 *
 * @example
 * ```ts
 * const builder = await ImageBuilder.create();
 * await builder.build({ dockerfile: '/repo/Dockerfile', context: '/repo', tag: 'example.com/app:1' });
 * await builder.exportArchive('example.com/app:1', '/tmp/app.oci.tar');
 * await startControlPlane({ realNodes: { count: 1, imageArchives: ['/tmp/app.oci.tar'] } });
 * ```
 */
export class ImageBuilder {
  readonly #tools: NodeTools;
  readonly #paths: BuildahPaths;
  readonly #onOutput: ((line: string) => void) | undefined;

  private constructor(tools: NodeTools, paths: BuildahPaths, onOutput: ((line: string) => void) | undefined) {
    this.#tools = tools;
    this.#paths = paths;
    this.#onOutput = onOutput;
  }

  /** Fetches buildah (with the node tools) if needed and writes its configuration. */
  static async create(options: ImageBuilderOptions = {}): Promise<ImageBuilder> {
    const root = options.cacheDir ?? cacheRoot();
    const tools = await ensureNodeTools({ cacheDir: root });
    const paths = buildahPaths(join(root, 'buildah'));
    for (const [file, content] of Object.entries(buildahConfigFiles(paths))) {
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content);
    }
    await mkdir(join(paths.runRoot, 'tmp'), { recursive: true });
    return new ImageBuilder(tools, paths, options.onOutput);
  }

  /** The node tools the builder runs with (mmdebstrap is among them). */
  get tools(): NodeTools {
    return this.#tools;
  }

  /** Runs `work` holding the machine's build lock. */
  async exclusively<T>(work: () => Promise<T>): Promise<T> {
    const release = await lockfile.lock(this.#paths.storage, {
      realpath: false,
      lockfilePath: `${this.#paths.storage}.build.lock`,
      stale: 60_000,
      update: 5_000,
      retries: { retries: 1_000, minTimeout: 500, maxTimeout: 2_000 },
    });
    try {
      return await work();
    } finally {
      await release();
    }
  }

  /** Builds `spec` (reusing cached layers) and returns the image's ID. */
  async build(spec: BuildSpec): Promise<string> {
    const store = spec.trustStore ?? trustStore();
    await this.#buildah(
      planBuild(this.#paths, { ...spec, ...(store ? { trustStore: store } : {}) }),
      `build ${spec.tag}`,
    );
    const image = await this.inspect(spec.tag);
    if (!image) throw new BinaryBuildError('buildah', `buildah: the build of ${spec.tag} finished but stored no image`);
    return image.id;
  }

  /** The stored image named `image`, or undefined when there is none. */
  async inspect(image: string): Promise<StoredImage | undefined> {
    let printed: string;
    try {
      printed = await this.#buildah(planInspect(this.#paths, image), `inspect ${image}`, true);
    } catch {
      return undefined;
    }
    const parsed = JSON.parse(printed) as {
      FromImageID?: string;
      OCIv1?: { config?: { Labels?: Record<string, string> } };
    };
    if (!parsed.FromImageID) return undefined;
    return { id: parsed.FromImageID, labels: parsed.OCIv1?.config?.Labels ?? {} };
  }

  /**
   * Writes `images` to `archive` (an OCI archive naming each image), replacing it whole. Several
   * images go through one OCI layout, so the layers they share are stored once.
   */
  async exportArchive(images: string | readonly string[], archive: string): Promise<void> {
    const all = typeof images === 'string' ? [images] : images;
    await mkdir(dirname(archive), { recursive: true });
    const partial = `${archive}.partial-${process.pid}`;
    const layout = `${partial}.d`;
    await rm(partial, { force: true });
    await rm(layout, { recursive: true, force: true });
    try {
      if (all.length === 1) {
        await this.#buildah(planExport(this.#paths, all[0] as string, partial), `export ${all[0]}`);
      } else {
        for (const image of all) await this.#buildah(planExport(this.#paths, image, layout, 'oci'), `export ${image}`);
        await execFileAsync('tar', ['-cf', partial, '-C', layout, 'oci-layout', 'index.json', 'blobs']);
      }
      await rename(partial, archive);
    } finally {
      await rm(partial, { force: true });
      await rm(layout, { recursive: true, force: true });
    }
  }

  /** Runs buildah; resolves its stdout, or throws with the tail of its output. */
  #buildah(args: readonly string[], what: string, quiet = false): Promise<string> {
    const env = { ...process.env, ...this.#tools.env, ...buildahEnv(this.#paths), LC_ALL: 'C' };
    return new Promise((resolve, reject) => {
      const child = spawn(join(this.#tools.binDir, 'buildah'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      const tail: string[] = [];
      const take = (chunk: Buffer, keep: boolean) => {
        const text = chunk.toString();
        if (keep) stdout += text;
        for (const line of text.split('\n').filter(Boolean)) {
          tail.push(line);
          if (tail.length > ERROR_TAIL_LINES) tail.shift();
          if (!quiet) this.#onOutput?.(line);
        }
      };
      child.stdout.on('data', (chunk: Buffer) => take(chunk, true));
      child.stderr.on('data', (chunk: Buffer) => take(chunk, false));
      child.on('error', reject);
      child.on('close', (code) => {
        if (code === 0) resolve(stdout);
        else reject(new BinaryBuildError('buildah', `buildah: ${what} failed (exit ${code})`, tail.join('\n')));
      });
    });
  }
}
