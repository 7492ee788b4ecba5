/**
 * Finds or builds the control-plane binaries.
 *
 * Guarantees: a binary is taken from `KUBEBUILDER_ASSETS` when present there, else from the
 * per-version cache, else built once from the pinned Go modules; a cross-process lock makes
 * parallel test processes wait for one build instead of racing; binaries appear in the cache
 * only once complete (built in a scratch dir, then renamed), so a killed build never leaves a
 * half-written binary behind (`fillCacheEntry`).
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import {
  allComponents,
  type BinaryName,
  type ComponentSpec,
  corednsComponent,
  helmComponent,
  kubeRouterComponent,
  kubernetesNodeComponent,
  versitygwComponent,
} from '../versions.js';
import { type ProgressListener, streamProgressReporter } from './build-progress.js';
import { cacheRoot, componentBinDir, componentDir } from './cache-dir.js';
import { allExecutable, type CacheEntry, fillCacheEntry, isEntryCached } from './cache-entry.js';
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
  /** The components to consider; defaults to the control plane's (`allComponents`: not helm, versitygw or kubelet). */
  readonly components?: readonly ComponentSpec[];
}

function cacheEntry(component: ComponentSpec, root: string): CacheEntry {
  return { ...component, dir: componentDir(component, root) };
}

/** Builds `component` into the cache unless another process already did (see `fillCacheEntry`). */
async function buildLocked(component: ComponentSpec, root: string, options: EnsureBinariesOptions): Promise<void> {
  const build = options.build ?? runGoBuild;
  await fillCacheEntry(
    cacheEntry(component, root),
    (scratch, onProgress) => build(planGoBuild(component, scratch), onProgress),
    options.onProgress ?? streamProgressReporter(),
  );
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
    if (!(await isEntryCached(cacheEntry(component, root)))) await buildLocked(component, root, options);
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

/**
 * Returns the path of the pinned `versitygw` (the S3 server of `startS3Server`), building it on
 * first use (about a minute with a warm Go cache; see the README). Same cache, lock and progress
 * as the control-plane binaries; never built to start a control plane.
 *
 * @example
 * ```ts
 * const versitygw = await ensureVersitygw();
 * execFileSync(versitygw, ['--version']); // Version  : v1.8.0
 * ```
 */
export async function ensureVersitygw(
  options: Omit<EnsureBinariesOptions, 'binaries' | 'components'> = {},
): Promise<string> {
  const paths = await ensureBinaries({ ...options, components: [versitygwComponent], binaries: ['versitygw'] });
  if (!paths.versitygw) throw new Error('ensureVersitygw: versitygw was neither found nor built');
  return paths.versitygw;
}

/** The node agents `ensureNodeBinaries` returns. */
export interface NodeBinaryPaths {
  readonly kubelet: string;
  readonly 'kube-proxy': string;
}

/**
 * Returns the paths of the pinned `kubelet` and `kube-proxy` (the control plane's version), for
 * nodes that run real containers, building them on first use: most of their packages are the
 * control plane's, so with its build in the Go build cache this takes about a minute (8–11 s when
 * the Go build cache holds these binaries' packages too; see the README). Same cache, lock and
 * progress as the control-plane binaries; never built to start a control plane.
 *
 * @example
 * ```ts
 * const node = await ensureNodeBinaries();
 * execFileSync(node.kubelet, ['--version']); // Kubernetes v1.34.4
 * ```
 */
export async function ensureNodeBinaries(
  options: Omit<EnsureBinariesOptions, 'binaries' | 'components'> = {},
): Promise<NodeBinaryPaths> {
  const paths = await ensureBinaries({
    ...options,
    components: [kubernetesNodeComponent],
    binaries: ['kubelet', 'kube-proxy'],
  });
  const kubelet = paths.kubelet;
  const kubeProxy = paths['kube-proxy'];
  if (!kubelet || !kubeProxy)
    throw new Error('ensureNodeBinaries: kubelet and kube-proxy were neither found nor built');
  return { kubelet, 'kube-proxy': kubeProxy };
}

/**
 * Returns the path of the NetworkPolicy enforcer of real nodes (kube-router's netpol controller
 * alone, `kube-router-netpol`), building it on first use: about a minute, since most of its
 * packages are client-go's at the version kubelet's build compiled (see the README). Same cache,
 * lock and progress as the control-plane binaries; never built to start a control plane.
 *
 * @example
 * ```ts
 * const enforcer = await ensureNetworkPolicyEnforcer();
 * // in a node's network namespace, with iptables and ipset on the PATH:
 * spawn(enforcer, ['--kubeconfig', kubeconfig, '--hostname-override', 'real-node-0', '--service-cluster-ip-range', range]);
 * ```
 */
export async function ensureNetworkPolicyEnforcer(
  options: Omit<EnsureBinariesOptions, 'binaries' | 'components'> = {},
): Promise<string> {
  const paths = await ensureBinaries({
    ...options,
    components: [kubeRouterComponent],
    binaries: ['kube-router-netpol'],
  });
  const enforcer = paths['kube-router-netpol'];
  if (!enforcer) throw new Error('ensureNetworkPolicyEnforcer: kube-router-netpol was neither found nor built');
  return enforcer;
}

/**
 * Returns the path of the cluster DNS of real nodes (CoreDNS with only the plugins it uses,
 * built from go/coredns), building it on first use (see the README for how long). Same cache,
 * lock and progress as the control-plane binaries; never built to start a control plane.
 *
 * @example
 * ```ts
 * const coredns = await ensureCoreDns();
 * spawn(coredns, ['-conf', corefilePath]);
 * ```
 */
export async function ensureCoreDns(
  options: Omit<EnsureBinariesOptions, 'binaries' | 'components'> = {},
): Promise<string> {
  const paths = await ensureBinaries({ ...options, components: [corednsComponent], binaries: ['coredns'] });
  if (!paths.coredns) throw new Error('ensureCoreDns: coredns was neither found nor built');
  return paths.coredns;
}
