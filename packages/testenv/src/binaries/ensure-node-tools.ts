/**
 * Finds or fetches what a real node runs beside kubelet (`nodeToolsPackages`: containerd, runc,
 * the CNI plugins, iptables and nft with their libraries), and what builds its images (buildah,
 * mmdebstrap): Debian 12's binary packages,
 * downloaded through a private apt configuration under the Kanri cache (the machine's apt
 * sources, lists and dpkg database are never touched, nothing is installed), each checked
 * against its pinned SHA-256 and unpacked with `dpkg-deb -x` into one relocatable tree,
 * `<cache>/node-tools-<version>/` (layout in `node-tools-layout.ts`). Same lock, scratch directory
 * and completion marker as every cache entry (`fillCacheEntry`).
 */
import { createHash } from 'node:crypto';
import { access, constants, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { basename, delimiter, join } from 'node:path';
import { BinaryBuildError } from '../errors.js';
import { nodeToolsPackages } from '../versions.js';
import { type DebianPackagePin, planAptFetchAll } from './apt-fetch-plan.js';
import { type ProgressListener, streamProgressReporter } from './build-progress.js';
import { cacheRoot } from './cache-dir.js';
import { allExecutable, type CacheEntry, fetchOnce } from './cache-entry.js';
import {
  NODE_TOOLS_BIN_LINKS,
  NODE_TOOLS_CNI_PLUGINS,
  NODE_TOOLS_NAME,
  NODE_TOOLS_RUNPATH_PROGRAMS,
  type NodeToolsEnv,
  type NodeToolsPaths,
  nodeToolsChecks,
  nodeToolsEnv,
  nodeToolsPaths,
  nodeToolsUnsupported,
  nodeToolsVersion,
} from './node-tools-layout.js';
import { runTool, type ToolOptions } from './run-tool.js';

export interface EnsureNodeToolsOptions {
  /** Cache root; defaults to `$KANRI_CACHE_DIR` or `~/.cache/kanri`. */
  readonly cacheDir?: string;
  /** Receives fetch progress; defaults to lines on stderr. */
  readonly onProgress?: ProgressListener;
  /** The packages to fetch, all of one suite; tests pass other pins to see a checksum mismatch refused. */
  readonly packages?: readonly DebianPackagePin[];
}

/** The node tools' paths, and the environment a child process needs to run them. */
export interface NodeTools extends NodeToolsPaths {
  /** The entry's version (`bookworm-<digest of the pins>`). */
  readonly version: string;
  /** `nodeToolsEnv` of this process's environment; call `nodeToolsEnv(tools, base)` for another base. */
  readonly env: NodeToolsEnv;
}

const MISSING_TOOL_HINT =
  'The node tools are fetched as Debian packages: install apt and dpkg (Debian or Ubuntu; `apt-get` and `dpkg-deb`)';

function tool(command: string, args: readonly string[], options: ToolOptions = {}): Promise<string> {
  return runTool(NODE_TOOLS_NAME, MISSING_TOOL_HINT, command, args, options);
}

async function onPath(command: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    try {
      await access(join(dir, command), constants.X_OK);
      return true;
    } catch {}
  }
  return false;
}

/** Fails before any download on a machine that cannot fetch or run the pinned packages. */
async function checkPrerequisites(): Promise<void> {
  const missing: string[] = [];
  for (const command of ['apt-get', 'dpkg-deb']) if (!(await onPath(command))) missing.push(command);
  const reason = nodeToolsUnsupported(process.arch, missing);
  if (reason) throw new BinaryBuildError(NODE_TOOLS_NAME, reason);
}

async function sha256Of(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

/** Runs each program of the tree once: a library that does not resolve here must fail now, not when a Pod starts. */
async function verify(pins: readonly DebianPackagePin[], paths: NodeToolsPaths): Promise<void> {
  const env = { ...nodeToolsEnv(paths) };
  for (const check of nodeToolsChecks(pins)) {
    const what = `\`${check.command} ${check.args.join(' ')}\` (package ${check.pin.name} ${check.pin.debianVersion})`;
    let printed: string;
    try {
      printed = await tool(join(paths.binDir, check.command), check.args, { env });
    } catch (error) {
      const tail = error instanceof BinaryBuildError ? error.logTail : '';
      throw new BinaryBuildError(NODE_TOOLS_NAME, `${NODE_TOOLS_NAME}: ${what} does not run here`, tail, {
        cause: error,
      });
    }
    const absent = check.expect.filter((text) => !printed.includes(text));
    if (absent.length > 0) {
      throw new BinaryBuildError(
        NODE_TOOLS_NAME,
        `${NODE_TOOLS_NAME}: ${what} printed ${JSON.stringify(printed.trim())}, not ${absent.map((a) => JSON.stringify(a)).join(' and ')}`,
      );
    }
  }
  if (!(await allExecutable(paths.cniBinDir, NODE_TOOLS_CNI_PLUGINS))) {
    const cni = pins.find((p) => p.name === 'containernetworking-plugins');
    throw new BinaryBuildError(
      NODE_TOOLS_NAME,
      `${NODE_TOOLS_NAME}: ${paths.cniBinDir} lacks one of ${NODE_TOOLS_CNI_PLUGINS.join(', ')} (package ${cni?.name ?? 'containernetworking-plugins'})`,
    );
  }
}

async function fetchInto(
  pins: readonly DebianPackagePin[],
  aptDir: string,
  scratch: string,
  finalDir: string,
): Promise<void> {
  await checkPrerequisites();
  const download = join(scratch, 'download');
  const plan = planAptFetchAll(pins, aptDir, download);
  for (const dir of plan.dirs) await mkdir(dir, { recursive: true });
  for (const [file, content] of Object.entries(plan.files)) await writeFile(file, content);
  await tool('apt-get', plan.update.args, plan.update);
  await tool('apt-get', plan.download.args, plan.download);
  // Every checksum is checked before anything is unpacked: a changed archive must not run, not even partly.
  for (const [index, pin] of pins.entries()) {
    const deb = plan.debFiles[index] ?? '';
    const sha256 = await sha256Of(deb);
    if (sha256 !== pin.sha256) {
      throw new BinaryBuildError(
        NODE_TOOLS_NAME,
        `${NODE_TOOLS_NAME}: ${basename(deb)} (package ${pin.name}) has SHA-256 ${sha256}, not the pinned ${pin.sha256}; refusing to run it`,
      );
    }
  }
  for (const [index, pin] of pins.entries()) {
    try {
      await tool('dpkg-deb', ['-x', plan.debFiles[index] ?? '', scratch]);
    } catch (error) {
      const tail = error instanceof BinaryBuildError ? error.logTail : '';
      throw new BinaryBuildError(NODE_TOOLS_NAME, `${NODE_TOOLS_NAME}: could not unpack package ${pin.name}`, tail, {
        cause: error,
      });
    }
  }
  await rm(download, { recursive: true, force: true });
  const paths = nodeToolsPaths(scratch);
  await mkdir(paths.binDir);
  // The entry is renamed from the scratch directory into place: links are relative, so they work
  // wherever the cache lies, and a RUNPATH (absolute) names the final directory.
  for (const [name, target] of Object.entries(NODE_TOOLS_BIN_LINKS)) await symlink(target, join(paths.binDir, name));
  const finalLibDir = nodeToolsPaths(finalDir).libDir;
  for (const program of NODE_TOOLS_RUNPATH_PROGRAMS) {
    await tool(join(paths.binDir, 'patchelf'), ['--set-rpath', finalLibDir, join(scratch, program)]);
  }
  await verify(pins, paths);
}

/**
 * Returns the paths of the pinned node tools (Debian 12's containerd 1.6.20, runc 1.1.5, CNI
 * plugins 1.1.1, iptables 1.8.9 in nf_tables mode and nft 1.0.6; buildah 1.28.2, mmdebstrap
 * 1.3.5 and patchelf 0.14.3, which build the nodes' images) and the environment a child process
 * needs to run them, fetching them on first use (19 packages and a 9 MB package index: about 8 s). Needs `apt-get` and `dpkg-deb`, and amd64. The programs
 * link to the machine's libc, libseccomp, libgmp, libjansson and libedit (Debian 12's base
 * system); they are run once after unpacking, so a machine without them fails here, naming the
 * package whose program did not run.
 *
 * @example
 * ```ts
 * const tools = await ensureNodeTools();
 * spawn(join(tools.binDir, 'containerd'), ['--config', config], { env: { ...process.env, ...tools.env } });
 * // containerd's CNI config: bin_dir = tools.cniBinDir
 * ```
 */
export async function ensureNodeTools(options: EnsureNodeToolsOptions = {}): Promise<NodeTools> {
  const root = options.cacheDir ?? cacheRoot();
  const pins = options.packages ?? nodeToolsPackages;
  const version = nodeToolsVersion(pins);
  const entry: CacheEntry = {
    name: NODE_TOOLS_NAME,
    version,
    dir: join(root, `${NODE_TOOLS_NAME}-${version}`),
    binaries: Object.keys(NODE_TOOLS_BIN_LINKS),
    trees: ['bin', 'usr'],
  };
  // apt's lists are shared between fetches of this suite; apt locks them itself.
  await fetchOnce(
    entry,
    version,
    (scratch) => fetchInto(pins, join(root, `apt-${pins[0]?.suite ?? 'none'}`), scratch, entry.dir),
    options.onProgress ?? streamProgressReporter(),
  );
  const paths = nodeToolsPaths(entry.dir);
  return { ...paths, version, env: nodeToolsEnv(paths) };
}
