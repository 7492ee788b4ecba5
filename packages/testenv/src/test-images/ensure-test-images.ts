/**
 * Builds the images real nodes run (the Pod sandbox and the echo workload) into the Kanri cache,
 * as OCI archives for `ctr -n k8s.io images import`: no registry can be reached from the machines
 * testenv runs on, so every image a node runs is built here from `go/images/`.
 *
 * Same guarantees as the Go-built binaries (`fillCacheEntry`): one producer at a time across
 * processes, files produced in a scratch directory and moved in whole, a `.complete` marker
 * written last, so a killed build never leaves an archive that looks usable.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ProgressListener, streamProgressReporter } from '../binaries/build-progress.js';
import { cacheRoot } from '../binaries/cache-dir.js';
import { type CacheEntry, entryBinDir, fillCacheEntry, isEntryCached } from '../binaries/cache-entry.js';
import { runTool } from '../binaries/run-tool.js';
import { echoImageSpec, IMAGE_PROGRAMS, pauseImageSpec, planImagesGoBuild } from './image-specs.js';
import { buildOciImageArchive } from './oci-archive.js';
import { ECHO_IMAGE, PAUSE_IMAGE, TEST_IMAGES_VERSION } from './test-image-pins.js';

/** An image and the archive to import it from. */
export interface TestImage {
  /** The full reference the archive imports the image under. */
  readonly ref: string;
  /** The OCI archive: `ctr -n k8s.io images import <archive>`. */
  readonly archive: string;
}

export interface TestImages {
  /** The sandbox image, `registry.k8s.io/pause:3.10`: containerd's `sandbox_image`. */
  readonly pause: TestImage;
  /** The HTTP test workload, `kanri.dev/testenv/echo:<version>`. */
  readonly echo: TestImage;
}

export interface EnsureTestImagesOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /** Receives build progress; defaults to lines on stderr. */
  readonly onProgress?: ProgressListener;
}

const COMPONENT = 'test-images';
const ARCHIVES = { pause: 'pause.oci.tar', echo: 'echo.oci.tar' } as const;
const MISSING_GO_HINT = 'The test images are built from go/images/: install Go 1.22 or newer.';

function cacheEntry(root: string): CacheEntry {
  return {
    name: COMPONENT,
    version: TEST_IMAGES_VERSION,
    dir: join(root, `${COMPONENT}-${TEST_IMAGES_VERSION}`),
    // The binaries stay beside the archives: handy to run outside a container when debugging.
    binaries: IMAGE_PROGRAMS,
    files: Object.values(ARCHIVES),
  };
}

/** Compiles both programs into `scratch`, then writes both archives beside them. */
async function produce(scratch: string, onProgress: ProgressListener): Promise<void> {
  const started = Date.now();
  // Counted in programs, not Go packages: `go build` of two small mains prints nothing worth parsing.
  const total = IMAGE_PROGRAMS.length;
  const report = (phase: 'compiling' | 'done', built: number) =>
    onProgress({
      component: COMPONENT,
      version: TEST_IMAGES_VERSION,
      phase,
      built,
      total,
      elapsedMs: Date.now() - started,
    });
  report('compiling', 0);
  const plan = planImagesGoBuild(scratch);
  await runTool(COMPONENT, MISSING_GO_HINT, 'go', plan.args, { cwd: plan.cwd, env: plan.env });
  const pause = await buildOciImageArchive(pauseImageSpec(await readFile(join(scratch, 'pause'))));
  await writeFile(join(scratch, ARCHIVES.pause), pause.archive);
  const echo = await buildOciImageArchive(echoImageSpec(await readFile(join(scratch, 'echo-server'))));
  await writeFile(join(scratch, ARCHIVES.echo), echo.archive);
  report('done', total);
}

/**
 * Returns the sandbox and echo images as archives to import, building them on first use (a few
 * seconds with a warm Go build cache; under half a minute cold, compiling the standard library).
 * Needs `go`. The archives are reproducible: the same sources and Go toolchain give the same bytes,
 * so importing them again into a containerd that has them changes nothing.
 *
 * @example
 * ```ts
 * const images = await ensureTestImages();
 * for (const image of [images.pause, images.echo]) {
 *   execFileSync('ctr', ['-n', 'k8s.io', '--address', socket, 'images', 'import', image.archive]);
 * }
 * // Then a Pod with `image: ECHO_IMAGE` and `imagePullPolicy: Never` runs on the node.
 * ```
 */
export async function ensureTestImages(options: EnsureTestImagesOptions = {}): Promise<TestImages> {
  const entry = cacheEntry(options.cacheDir ?? cacheRoot());
  if (!(await isEntryCached(entry))) {
    await fillCacheEntry(entry, produce, options.onProgress ?? streamProgressReporter());
  }
  const bin = entryBinDir(entry);
  return {
    pause: { ref: PAUSE_IMAGE, archive: join(bin, ARCHIVES.pause) },
    echo: { ref: ECHO_IMAGE, archive: join(bin, ARCHIVES.echo) },
  };
}
