/**
 * Finds or builds the control-plane binaries.
 *
 * Guarantees: a binary is taken from `KUBEBUILDER_ASSETS` when present there, else from the
 * per-version cache, else built once from the pinned Go modules; a cross-process lock makes
 * parallel test processes wait for one build instead of racing; binaries appear in the cache
 * only once complete (built in a scratch dir, then renamed), so a killed build never leaves a
 * half-written binary behind.
 */
import { access, constants, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import lockfile from 'proper-lockfile';
import { errnoCode } from '../errno.js';
import { BinaryBuildError } from '../errors.js';
import { allComponents, type BinaryName, type ComponentSpec, helmComponent } from '../versions.js';
import { type ProgressListener, streamProgressReporter } from './build-progress.js';
import { cacheRoot, componentBinDir, componentDir } from './cache-dir.js';
import { runGoBuild } from './go-build.js';
import { type GoBuildPlan, planGoBuild } from './go-build-plan.js';

export type BinaryPaths = Partial<Record<BinaryName, string>>;

export interface EnsureBinariesOptions {
  /** Binaries needed; defaults to every binary of `components`. Only components holding one of these are built. */
  readonly binaries?: readonly BinaryName[];
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /** A directory of prebuilt binaries (setup-envtest's layout); defaults to `$KUBEBUILDER_ASSETS`. */
  readonly assetsDir?: string;
  /** Receives build progress; defaults to lines on stderr. */
  readonly onProgress?: ProgressListener;
  /** Replaces the Go build (tests use this to exercise locking without compiling Kubernetes). */
  readonly build?: (plan: GoBuildPlan, onProgress: ProgressListener) => Promise<void>;
  /** The components to consider; defaults to the control plane's (`allComponents`, not helm). */
  readonly components?: readonly ComponentSpec[];
}

const COMPLETE_MARKER = '.complete';

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function allExecutable(dir: string, names: readonly string[]): Promise<boolean> {
  const found = await Promise.all(names.map((n) => isExecutable(join(dir, n))));
  return found.every(Boolean);
}

/** A component is cached once its marker exists (written last) and every binary is still there. */
async function isCached(component: ComponentSpec, root: string): Promise<boolean> {
  const bin = componentBinDir(component, root);
  try {
    await access(join(bin, COMPLETE_MARKER));
    await Promise.all((component.files ?? []).map((f) => access(join(bin, f))));
  } catch {
    return false;
  }
  return allExecutable(bin, component.binaries);
}

/** Builds `component` into the cache unless another process already did, holding the component's lock throughout. */
async function buildLocked(component: ComponentSpec, root: string, options: EnsureBinariesOptions): Promise<void> {
  const dir = componentDir(component, root);
  await mkdir(dir, { recursive: true });
  const onProgress = options.onProgress ?? streamProgressReporter();
  const waitStarted = Date.now();
  let release: (() => Promise<void>) | undefined;
  let compromised: Error | undefined;
  while (!release) {
    try {
      release = await lockfile.lock(dir, {
        realpath: false,
        lockfilePath: `${dir}.lock`,
        // The holder refreshes the lock every 5 s; one not refreshed for 60 s belongs to a dead process.
        stale: 60_000,
        update: 5_000,
        onCompromised: (error) => {
          compromised = error;
        },
      });
    } catch (error) {
      if (errnoCode(error) !== 'ELOCKED') throw error;
      onProgress({
        component: component.name,
        version: component.version,
        phase: 'waiting-for-lock',
        elapsedMs: Date.now() - waitStarted,
      });
      await sleep(1_000);
      if (await isCached(component, root)) return;
    }
  }
  try {
    if (await isCached(component, root)) return;
    const scratch = join(dir, `build-${process.pid}-${Date.now()}`);
    await mkdir(scratch, { recursive: true });
    try {
      await (options.build ?? runGoBuild)(planGoBuild(component, scratch), onProgress);
      if (compromised) throw compromised;
      const bin = componentBinDir(component, root);
      await mkdir(bin, { recursive: true });
      for (const name of [...component.binaries, ...(component.files ?? [])]) {
        try {
          await access(join(scratch, name));
        } catch (error) {
          throw new BinaryBuildError(
            component.name,
            `${component.name}: the build finished but produced no ${name}`,
            '',
            {
              cause: error,
            },
          );
        }
        await rename(join(scratch, name), join(bin, name));
      }
      await writeFile(join(bin, COMPLETE_MARKER), `${component.version}\n`);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  } finally {
    await release();
  }
}

/**
 * Returns the path of every requested binary, building what is missing.
 *
 * @example
 * ```ts
 * const paths = await ensureBinaries({ binaries: ['kube-apiserver', 'etcd'] });
 * console.log(paths['kube-apiserver']); // ~/.cache/kanri/kubernetes-v1.34.4/bin/kube-apiserver
 * ```
 */
export async function ensureBinaries(options: EnsureBinariesOptions = {}): Promise<BinaryPaths> {
  const root = options.cacheDir ?? cacheRoot();
  const assetsDir = options.assetsDir ?? process.env.KUBEBUILDER_ASSETS;
  const components = options.components ?? allComponents;
  const wanted = new Set<string>(options.binaries ?? components.flatMap((c) => c.binaries));
  const paths: BinaryPaths = {};
  for (const component of components) {
    const needed = component.binaries.filter((b) => wanted.has(b)) as BinaryName[];
    if (needed.length === 0) continue;
    const assetFiles = await Promise.all(
      (component.files ?? []).map((f) =>
        access(join(assetsDir ?? '', f)).then(
          () => true,
          () => false,
        ),
      ),
    );
    if (assetsDir && (await allExecutable(assetsDir, needed)) && assetFiles.every(Boolean)) {
      for (const name of needed) paths[name] = join(assetsDir, name);
      continue;
    }
    if (!(await isCached(component, root))) await buildLocked(component, root, options);
    for (const name of needed) paths[name] = join(componentBinDir(component, root), name);
  }
  return paths;
}

/**
 * Returns the path of the pinned `helm`, building it on first use (about as long as etcd; see
 * the README). Same cache, lock and progress as the control-plane binaries.
 *
 * @example
 * ```ts
 * const helm = await ensureHelm();
 * execFileSync(helm, ['lint', 'out/chart/website-operator']);
 * ```
 */
export async function ensureHelm(
  options: Omit<EnsureBinariesOptions, 'binaries' | 'components'> = {},
): Promise<string> {
  const paths = await ensureBinaries({ ...options, components: [helmComponent], binaries: ['helm'] });
  if (!paths.helm) throw new Error('ensureHelm: helm was neither found nor built');
  return paths.helm;
}
