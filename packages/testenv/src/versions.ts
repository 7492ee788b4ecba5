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
