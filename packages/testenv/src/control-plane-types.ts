/** The control plane's options and the handle `startControlPlane` returns (control-plane.ts). */
import type { ProgressListener } from './binaries/build-progress.js';
import type { BinaryPaths } from './binaries/ensure-binaries.js';
import type { Kubeconfig } from './credentials/kubeconfig.js';
import type { ProcessNode } from './process-node/process-node.js';
import type { ProcessNodesOptions } from './process-node/process-nodes.js';
import type { NetworkPlan } from './real-node/network-plan.js';
import type { RealNode } from './real-node/real-node.js';
import type { RealNodesOptions } from './real-node/real-nodes.js';
import type { S3Server, S3ServerOptions } from './s3/s3-server.js';

export interface ControlPlaneOptions {
  /** Also run kube-controller-manager and kube-scheduler. Default false. */
  readonly controllers?: boolean;
  /** Run kwok with this many fake nodes, so Pods get scheduled and become Ready. Default 0. Implies `controllers`. */
  readonly nodes?: number;
  /**
   * Add process nodes, which run Pods' containers as real local processes (see
   * {@link ProcessNodesOptions}). Implies `controllers`. Use `nodes: 0` for Pods to land only on them.
   *
   * @example
   * ```ts
   * const cp = await startControlPlane({
   *   controllers: true,
   *   processNodes: {
   *     count: 2,
   *     images: { 'ghcr.io/kanri-dev/postgres': { entrypoint: [process.execPath, '/abs/agent.js'], user: 'postgres' } },
   *   },
   * });
   * ```
   */
  readonly processNodes?: ProcessNodesOptions;
  /**
   * Add real nodes: containerd, kubelet and kube-proxy in network namespaces of their own, running
   * real images (see {@link RealNodesOptions}). Implies `controllers`. Needs root on Linux; the API
   * server then listens on the nodes' bridge instead of loopback.
   *
   * @example
   * ```ts
   * const images = await ensureTestImages();
   * const cp = await startControlPlane({ realNodes: { count: 2, imageArchives: [images.echo.archive] } });
   * ```
   */
  readonly realNodes?: RealNodesOptions;
  /**
   * Run kube-controller-manager's node-lifecycle and taint-eviction controllers, so that a real
   * node that loses power becomes NotReady, its Pods not Ready and, after their toleration,
   * evicted, as on a real cluster: what operators that wait for Kubernetes to say a Pod is gone
   * (CloudNativePG) need to fail over. Only with `realNodes`. Default false.
   */
  readonly nodeLifecycle?: boolean;
  /** Extra kube-apiserver flags, appended last so they override. */
  readonly apiServerArgs?: readonly string[];
  /** How long each component may take to become healthy. Default 60 s. */
  readonly startTimeoutMs?: number;
  /** Where the per-instance data directory is created. Default: the OS temp dir. */
  readonly baseDir?: string;
  /** Receives progress if binaries must be built first. Default: lines on stderr. */
  readonly onBuildProgress?: ProgressListener;
  /**
   * Use the cluster from `KUBECONFIG` instead of starting one (envtest's USE_EXISTING_CLUSTER).
   * Default: `KANRI_USE_EXISTING_CLUSTER` (or `USE_EXISTING_CLUSTER`) is `true`. `stop()` then
   * leaves the cluster alone and `addUser` is unsupported.
   */
  readonly useExistingCluster?: boolean;
  /**
   * Also start an S3 server (versitygw, see `startS3Server`) as `cp.s3`, stopped and removed with
   * the control plane; `true` for the defaults. Default: none.
   *
   * @example
   * ```ts
   * await using cp = await startControlPlane({ processNodes: { count: 1, images }, s3: true });
   * await cp.s3?.createBucket('backups');
   * ```
   */
  readonly s3?: boolean | S3ServerOptions;
}

export interface UserOptions {
  /** The user name (certificate CN). */
  readonly name: string;
  /** The user's groups (certificate O entries). */
  readonly groups?: readonly string[];
}

export interface UserCredentials {
  readonly name: string;
  readonly groups: readonly string[];
  readonly kubeconfig: Kubeconfig;
  readonly kubeconfigPath: string;
}

/** A started control plane. */
export interface ControlPlane extends AsyncDisposable {
  /** The API server URL, e.g. `https://127.0.0.1:38125`. */
  readonly server: string;
  /** Admin kubeconfig (group system:masters). */
  readonly kubeconfig: Kubeconfig;
  /** The same kubeconfig on disk, for kubectl and child processes. */
  readonly kubeconfigPath: string;
  /** This instance's private directory (removed by `stop()`); undefined for an existing cluster. */
  readonly dataDir: string | undefined;
  /** The processes this instance started, in start order. */
  readonly processes: readonly { readonly name: string; readonly pid: number }[];
  /** Every port this instance reserved. */
  readonly ports: readonly number[];
  /** Paths of the binaries in use (kubectl included, for tests that shell out). */
  readonly binaries: BinaryPaths;
  /** Names of the kwok nodes. */
  readonly nodeNames: readonly string[];
  /** Names of the process nodes (`process-node-0` …); empty without `processNodes`. */
  readonly processNodeNames: readonly string[];
  /** The process nodes, to find the processes (PIDs, log files) of Pods' containers. */
  readonly processNodes: readonly ProcessNode[];
  /** The real nodes (`real-node-0` …); empty without `realNodes`. */
  readonly realNodes: readonly RealNode[];
  /** The real nodes' addresses and ranges (bridge, Pod and Service CIDRs); undefined without `realNodes`. */
  readonly realNodeNetwork: NetworkPlan | undefined;
  /** etcd's client URL (`http://127.0.0.1:<port>`), for tests that act on storage directly (compaction). */
  readonly etcdUrl: string | undefined;
  /** Issues a client certificate for a new user and returns a kubeconfig that authenticates as them. */
  addUser(user: UserOptions): Promise<UserCredentials>;
  /** Kills one component (`etcd` or `kube-apiserver`) by PID and waits for it to exit; for failure tests. */
  killComponent(name: 'etcd' | 'kube-apiserver', signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed component again with the same flags and port, and waits until it is healthy. */
  startComponent(name: 'etcd' | 'kube-apiserver'): Promise<void>;
  /** The S3 server of `options.s3`; undefined without it. */
  readonly s3: S3Server | undefined;
  /** Stops every process by PID, waits for each, and removes the data directory. Safe to call twice. */
  stop(): Promise<void>;
}
