/**
 * Pure layout of the node-tools cache entry (`<cache>/node-tools-<version>`): Debian 12's
 * containerd, runc, CNI plugins, iptables and nft, and buildah and mmdebstrap, which build the
 * images the nodes run, unpacked side by side as Debian lays them out
 * (`usr/…`), plus a `bin/` of relative links naming the commands a node runs, so the tree works
 * wherever the cache lies. Which commands, where their libraries are, the environment a child
 * process needs to find them, and how to tell the unpacked programs work.
 */
import { createHash } from 'node:crypto';
import { delimiter, join } from 'node:path';
import type { DebianPackagePin } from './apt-fetch-plan.js';

/** Cache entry name and progress name. */
export const NODE_TOOLS_NAME = 'node-tools';

const XTABLES_NFT = '../usr/sbin/xtables-nft-multi';

/**
 * The commands of `bin/` and what each links to, relative to `bin/`. The iptables names point
 * at the nf_tables multi-call binary, as Debian's `update-alternatives` makes them by default:
 * it picks its mode from the name it is called by, and kube-proxy, kubelet and the portmap plugin
 * call `iptables`, `iptables-save` and `iptables-restore` (and the ip6tables ones) by these names.
 */
export const NODE_TOOLS_BIN_LINKS: Readonly<Record<string, string>> = {
  containerd: '../usr/bin/containerd',
  'containerd-shim-runc-v2': '../usr/bin/containerd-shim-runc-v2',
  ctr: '../usr/bin/ctr',
  runc: '../usr/sbin/runc',
  iptables: XTABLES_NFT,
  'iptables-save': XTABLES_NFT,
  'iptables-restore': XTABLES_NFT,
  ip6tables: XTABLES_NFT,
  'ip6tables-save': XTABLES_NFT,
  'ip6tables-restore': XTABLES_NFT,
  nft: '../usr/sbin/nft',
  // kube-router's NetworkPolicy controller keeps a policy's peers in ipsets, run by this name.
  ipset: '../usr/sbin/ipset',
  buildah: '../usr/bin/buildah',
  mmdebstrap: '../usr/bin/mmdebstrap',
  // mmdebstrap runs it by name, from the PATH.
  mmtarfilter: '../usr/bin/mmtarfilter',
  patchelf: '../usr/bin/patchelf',
};

/**
 * The programs whose library path is written into them (RUNPATH, with patchelf) as the entry's
 * final `libDir`: buildah re-executes itself into a chroot helper with a cleared environment, so
 * LD_LIBRARY_PATH cannot lead it to libgpgme there.
 */
export const NODE_TOOLS_RUNPATH_PROGRAMS = ['usr/bin/buildah'] as const;

/** The CNI plugins a node's network configuration uses; the entry holds every plugin of the package. */
export const NODE_TOOLS_CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;

/** Where things are inside one node-tools entry. */
export interface NodeToolsPaths {
  /** The entry, for example `~/.cache/kanri/node-tools-bookworm-0123456789ab`. */
  readonly root: string;
  /** To put first on PATH: containerd, containerd-shim-runc-v2, ctr, runc, iptables*, ip6tables*, nft. */
  readonly binDir: string;
  /** The CNI plugins (`bridge`, `host-local`, `loopback`, `portmap`, …): containerd's CNI `bin_dir`. */
  readonly cniBinDir: string;
  /** The netfilter libraries the programs link against: for LD_LIBRARY_PATH. */
  readonly libDir: string;
  /** iptables' extensions (`libxt_*.so`): for XTABLES_LIBDIR. */
  readonly xtablesLibDir: string;
}

/** The variables a child process (containerd, kubelet, kube-proxy, a CNI plugin) needs to run the tools. */
export interface NodeToolsEnv {
  /** `binDir`, then the base PATH. */
  readonly PATH: string;
  /** `libDir`, then the base LD_LIBRARY_PATH if any. */
  readonly LD_LIBRARY_PATH: string;
  /** `xtablesLibDir` alone: the machine's own extensions may not match these iptables libraries. */
  readonly XTABLES_LIBDIR: string;
}

/** One smoke test of the unpacked tree: `command args` must run and print every string of `expect`. */
export interface NodeToolsCheck {
  /** The package the command comes from, for the error message. */
  readonly pin: DebianPackagePin;
  /** A name in `bin/`. */
  readonly command: string;
  readonly args: readonly string[];
  readonly expect: readonly string[];
}

/** A PATH for a process started without one, as a login shell of root would have. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The entry's version: its suite and a digest of every pin, so that changing any package or
 * checksum fetches a new entry instead of reusing one unpacked from other packages.
 *
 * @example
 * ```ts
 * nodeToolsVersion(nodeToolsPackages); // 'bookworm-' followed by 12 hex digits
 * ```
 */
export function nodeToolsVersion(pins: readonly DebianPackagePin[]): string {
  const digest = createHash('sha256')
    .update(pins.map((p) => JSON.stringify([p.name, p.version, p.debianVersion, p.architecture, p.sha256])).join('\n'))
    .digest('hex');
  return `${pins[0]?.suite ?? 'none'}-${digest.slice(0, 12)}`;
}

/**
 * The paths inside the entry at `root`.
 *
 * @example
 * ```ts
 * nodeToolsPaths('/c/node-tools-v').xtablesLibDir; // '/c/node-tools-v/usr/lib/x86_64-linux-gnu/xtables'
 * ```
 */
export function nodeToolsPaths(root: string): NodeToolsPaths {
  const libDir = join(root, 'usr', 'lib', 'x86_64-linux-gnu');
  return {
    root,
    binDir: join(root, 'bin'),
    cniBinDir: join(root, 'usr', 'lib', 'cni'),
    libDir,
    xtablesLibDir: join(libDir, 'xtables'),
  };
}

/**
 * The environment variables to add to a child process's environment (`base`, by default this
 * process's) so that it runs the entry's tools instead of the machine's, and they find their
 * libraries. Everything else of `base` is left to the caller to pass on.
 *
 * @example
 * ```ts
 * spawn(join(tools.binDir, 'containerd'), args, { env: { ...process.env, ...nodeToolsEnv(tools) } });
 * ```
 */
export function nodeToolsEnv(paths: NodeToolsPaths, base: NodeJS.ProcessEnv = process.env): NodeToolsEnv {
  return {
    PATH: [paths.binDir, base.PATH || DEFAULT_PATH].join(delimiter),
    LD_LIBRARY_PATH: [paths.libDir, ...(base.LD_LIBRARY_PATH ? [base.LD_LIBRARY_PATH] : [])].join(delimiter),
    XTABLES_LIBDIR: paths.xtablesLibDir,
  };
}

function pinNamed(pins: readonly DebianPackagePin[], name: string): DebianPackagePin {
  const pin = pins.find((p) => p.name === name);
  if (!pin) throw new Error(`node tools: no pinned package ${name}`);
  return pin;
}

/**
 * How to tell that the unpacked programs run here: each prints its version, which must be the
 * pinned one (and iptables must be the nf_tables variant, not the legacy one).
 *
 * @example
 * ```ts
 * nodeToolsChecks(nodeToolsPackages).map((c) => c.command); // ['containerd', 'runc', 'iptables', 'nft', 'ipset', 'buildah', …]
 * ```
 */
export function nodeToolsChecks(pins: readonly DebianPackagePin[]): NodeToolsCheck[] {
  const containerd = pinNamed(pins, 'containerd');
  const runc = pinNamed(pins, 'runc');
  const iptables = pinNamed(pins, 'iptables');
  const nftables = pinNamed(pins, 'nftables');
  const ipset = pinNamed(pins, 'ipset');
  const buildah = pinNamed(pins, 'buildah');
  const mmdebstrap = pinNamed(pins, 'mmdebstrap');
  const patchelf = pinNamed(pins, 'patchelf');
  return [
    // Debian's builds print their package version: it tells this tree's binary from another containerd on the PATH.
    { pin: containerd, command: 'containerd', args: ['--version'], expect: [containerd.debianVersion] },
    { pin: runc, command: 'runc', args: ['--version'], expect: [`runc version ${runc.version}`, runc.debianVersion] },
    { pin: iptables, command: 'iptables', args: ['--version'], expect: [`iptables v${iptables.version} (nf_tables)`] },
    { pin: nftables, command: 'nft', args: ['--version'], expect: [`nftables v${nftables.version}`] },
    { pin: ipset, command: 'ipset', args: ['version'], expect: [`ipset v${ipset.version}`] },
    { pin: buildah, command: 'buildah', args: ['--version'], expect: [`buildah version ${buildah.version}`] },
    { pin: mmdebstrap, command: 'mmdebstrap', args: ['--version'], expect: [`mmdebstrap ${mmdebstrap.version}`] },
    { pin: patchelf, command: 'patchelf', args: ['--version'], expect: [`patchelf ${patchelf.version}`] },
  ];
}

/**
 * Why this machine cannot fetch the node tools, or undefined when it can: the pins are amd64
 * packages, fetched with `apt-get` and unpacked with `dpkg-deb`.
 *
 * @example
 * ```ts
 * nodeToolsUnsupported('arm64', []); // 'node-tools: the pinned Debian packages are amd64 (x86_64) only; …'
 * ```
 */
export function nodeToolsUnsupported(arch: string, missingCommands: readonly string[]): string | undefined {
  const reasons: string[] = [];
  if (arch !== 'x64') {
    reasons.push(`the pinned Debian packages are amd64 (x86_64) only; this machine is ${arch}`);
  }
  if (missingCommands.length > 0) {
    const names = missingCommands.map((c) => `\`${c}\``).join(' and ');
    reasons.push(
      `${names} ${missingCommands.length > 1 ? 'were' : 'was'} not found on the PATH; the node tools are fetched as Debian packages: install apt and dpkg (Debian or Ubuntu)`,
    );
  }
  return reasons.length > 0 ? `${NODE_TOOLS_NAME}: ${reasons.join('; ')}` : undefined;
}
