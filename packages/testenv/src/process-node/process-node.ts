/**
 * A process node: a Node object that a test process keeps Ready, and a loop that runs the Pods
 * bound to it as local processes (see PodWorker). It stands in for kubelet + container runtime;
 * it is not one (no isolation, no resource limits, no image pulls, no cluster DNS).
 */
import { appendFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { arch } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatMicroTime } from '@kanri/timing';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import type { FaultProxy } from '../fault-proxy.js';
import { KUBERNETES_VERSION } from '../versions.js';
import { type Api, encode, kubeTime } from './api.js';
import type { GroupReaper } from './group-reaper.js';
import type { ImageMappings } from './image.js';
import { HOST_IP, type NodeContext, type ProcessContainer } from './node-context.js';
import type { PodNetwork } from './pod-network.js';
import { PodWorker } from './pod-worker.js';
import { type CrashFreeze, crashProcessTrees } from './process-tree.js';
import type { PasswdEntry } from './users.js';

/** Label on every process node, for nodeSelectors. */
export const PROCESS_NODE_LABEL = 'kanri.dev/process-node';

const LEASE_DURATION_SECONDS = 40;
const LEASE_RENEW_MS = 10_000;
const RESYNC_MS = 5_000;

export interface ProcessNodeConfig {
  readonly api: Api;
  readonly name: string;
  readonly network: PodNetwork;
  readonly reaper: GroupReaper;
  readonly images: ImageMappings;
  readonly dataDir: string;
  readonly logFile: string;
  readonly server: string;
  readonly caPem: string;
  readonly capacity: Readonly<Record<string, string>>;
  readonly maxGracePeriodSeconds: number;
  readonly passwd: readonly PasswdEntry[];
  /** Set when this node's Pods reach the API server through a proxy (whose URL is `server`). */
  readonly apiProxy?: FaultProxy;
}

/** A running process node, as tests see it. */
export interface ProcessNode {
  /** The Node's name. */
  readonly name: string;
  /**
   * The proxy this node's Pods reach the API server through, when the nodes were started with
   * `apiProxy: true`: stall or refuse it to cut these Pods (only) off the API server.
   */
  readonly apiProxy: FaultProxy | undefined;
  /** The containers of the Pods on this node (until each Pod is gone from the API). */
  containers(): ProcessContainer[];
  /**
   * The host loses power: every process of every container on it, descendants that left the
   * container's process group included (PostgreSQL backends), is stopped and then SIGKILLed
   * (no SIGTERM, no restart), so none acknowledges anything after the crash. Where the machine
   * has a cgroup freezer that root may use, they all stop at one instant; otherwise by SIGSTOP, one
   * after another (`frozenBy` says which). The node stops heartbeating, watching and writing Pod
   * status, so its Pods stay `Running` (and Ready) in the API, as they do on a real cluster until
   * the node controller notices. Resolves once every process is gone; undefined if the node was
   * down already.
   *
   * @example
   * ```ts
   * const node = cp.processNodes.find((n) => n.containers().some((c) => c.pod === 'db-0'));
   * await node?.crash();   // kill -9 of the whole host
   * await node?.recover(); // it boots again and re-runs its Pods
   * ```
   */
  crash(): Promise<{ frozenBy: CrashFreeze; killed: number } | undefined>;
  /** After `crash()`: the node comes back (heartbeats, watch) and runs the Pods bound to it again. */
  recover(): Promise<void>;
}

const kubeArch = (a: string) =>
  ({ x64: 'amd64', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' })[a] ?? a;

/**
 * The Node object a process node registers. Pure. `images` are the image names it maps, reported
 * in `status.images` as a kubelet reports the images its node holds.
 */
export function buildProcessNode(
  name: string,
  capacity: Readonly<Record<string, string>>,
  now: string,
  images: readonly string[] = [],
): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      // No kwok annotation: kwok manages only annotated nodes, and so leaves this one and its Pods alone.
      annotations: { 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        [PROCESS_NODE_LABEL]: 'true',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': kubeArch(arch()),
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': kubeArch(arch()),
      },
    },
    spec: {},
    status: {
      capacity: { ...capacity },
      allocatable: { ...capacity },
      conditions: nodeConditions(now, now),
      addresses: [
        { type: 'InternalIP', address: HOST_IP },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
      images: images.map((image) => ({ names: [image], sizeBytes: 0 })),
      nodeInfo: {
        architecture: kubeArch(arch()),
        operatingSystem: 'linux',
        osImage: 'kanri process node',
        kernelVersion: '',
        kubeletVersion: KUBERNETES_VERSION,
        kubeProxyVersion: '',
        containerRuntimeVersion: 'kanri-process://0.1.0',
        bootID: '',
        machineID: '',
        systemUUID: '',
      },
    },
  };
}

function nodeConditions(heartbeat: string, transition: string) {
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: transition,
  });
  return [
    condition('Ready', 'True', 'KubeletReady', 'process node is posting ready status'),
    condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'process node has sufficient memory available'),
    condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'process node has no disk pressure'),
    condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'process node has sufficient PID available'),
  ];
}

export class ProcessNodeAgent implements ProcessNode {
  readonly name: string;
  readonly #config: ProcessNodeConfig;
  readonly #context: NodeContext;
  readonly apiProxy: FaultProxy | undefined;
  readonly #workers = new Map<string, PodWorker>();
  /** Aborted when the node stops or crashes; replaced on recover. */
  #abort = new AbortController();
  #timers: NodeJS.Timeout[] = [];
  #crashed = false;
  #syncing: Promise<void> | undefined;
  #syncAgain = false;
  #watch: Promise<void> | undefined;
  #registeredAt = kubeTime();

  constructor(config: ProcessNodeConfig) {
    this.name = config.name;
    this.#config = config;
    this.apiProxy = config.apiProxy;
    const nodeDir = join(config.dataDir, 'process-nodes', config.name);
    this.#context = {
      api: config.api,
      nodeName: config.name,
      network: config.network,
      reaper: config.reaper,
      images: config.images,
      nodeDir,
      server: config.server,
      caPem: config.caPem,
      allocatable: config.capacity,
      maxGracePeriodSeconds: config.maxGracePeriodSeconds,
      passwd: config.passwd,
      self: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 },
      log: (message) => this.log(message),
    };
  }

  log(message: string): void {
    try {
      appendFileSync(this.#config.logFile, `${new Date().toISOString()} ${message}\n`);
    } catch {
      // The data directory is gone (stopping); nothing to record.
    }
  }

  containers(): ProcessContainer[] {
    return [...this.#workers.values()].flatMap((worker) => worker.containers());
  }

  /** Registers the Node and its Lease, then starts running the Pods bound to it. */
  async start(): Promise<void> {
    const { api } = this.#config;
    await mkdir(join(this.#context.nodeDir, 'pods'), { recursive: true, mode: 0o711 });
    await mkdir(join(this.#context.nodeDir, 'logs'), { recursive: true });
    const node = buildProcessNode(
      this.name,
      this.#config.capacity,
      this.#registeredAt,
      Object.keys(this.#config.images),
    );
    const created = await api.create<Node>('/api/v1/nodes', node);
    if (!created) {
      // Registered before (a restarted node): take it over.
      await api.patch(`/api/v1/nodes/${encode(this.name)}`, { metadata: { labels: node.metadata?.labels } });
      await this.#postStatus();
    }
    await this.#startLoops();
  }

  /** Heartbeats, the watch on this node's Pods, and a first sync (which adopts Pods already bound). */
  async #startLoops(): Promise<void> {
    await this.#renewLease();
    this.#every(LEASE_RENEW_MS, () => this.#renewLease());
    this.#every(60_000, () => this.#postStatus());
    this.#every(RESYNC_MS, async () => this.requestSync());
    const path = `/api/v1/pods?fieldSelector=${encode(`spec.nodeName=${this.name}`)}`;
    this.#watch = this.#config.api.watch(path, () => this.requestSync(), this.#abort.signal);
    this.requestSync();
    await this.#syncing;
  }

  async crash(): Promise<{ frozenBy: CrashFreeze; killed: number } | undefined> {
    if (this.#crashed || this.#abort.signal.aborted) return undefined;
    this.#crashed = true;
    // Every process of every container at one instant, before anything else: a host losing power
    // acknowledges nothing after it, not even from a process that left its container's group.
    const roots = this.containers().flatMap((container) => (container.pid ? [container.pid] : []));
    const started = performance.now();
    const { killed, frozenBy } = crashProcessTrees(roots);
    const ms = (performance.now() - started).toFixed(1);
    this.log(
      `crash: froze (${frozenBy}) and killed ${killed.length} processes of ${roots.length} containers in ${ms} ms; node silent`,
    );
    this.#abort.abort();
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    const workers = [...this.#workers.values()];
    this.#workers.clear();
    await Promise.all(workers.map((worker) => worker.crash()));
    for (const worker of workers) worker.release();
    await Promise.race([this.#syncing, sleep(1_000, undefined, { ref: false })]);
    await this.#watch;
    return { frozenBy, killed: killed.length };
  }

  async recover(): Promise<void> {
    if (!this.#crashed) return;
    this.#crashed = false;
    this.#abort = new AbortController();
    this.log('recover: the node is back; adopting its Pods');
    await this.#postStatus();
    await this.#startLoops();
  }

  #every(ms: number, task: () => Promise<void>) {
    const timer = setInterval(() => {
      task().catch((error: unknown) =>
        this.log(`periodic task: ${error instanceof Error ? error.message : String(error)}`),
      );
    }, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  async #postStatus(): Promise<void> {
    const status = buildProcessNode(
      this.name,
      this.#config.capacity,
      this.#registeredAt,
      Object.keys(this.#config.images),
    ).status;
    if (status?.conditions) status.conditions = nodeConditions(kubeTime(), this.#registeredAt);
    await this.#config.api.patch(`/api/v1/nodes/${encode(this.name)}/status`, { status }, 'strategic');
  }

  async #renewLease(): Promise<void> {
    const { api } = this.#config;
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encode(this.name)}`;
    const spec = {
      holderIdentity: this.name,
      leaseDurationSeconds: LEASE_DURATION_SECONDS,
      renewTime: formatMicroTime(new Date()),
    };
    const existing = await api.get<{ metadata: { uid: string } }>(path);
    if (existing) {
      await api.patch(path, { spec });
      return;
    }
    const node = await api.get<Node>(`/api/v1/nodes/${encode(this.name)}`);
    await api.create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.name,
        namespace: 'kube-node-lease',
        // As the kubelet does: the Lease goes when the Node goes.
        ownerReferences: node?.metadata?.uid
          ? [{ apiVersion: 'v1', kind: 'Node', name: this.name, uid: node.metadata.uid }]
          : undefined,
      },
      spec,
    });
  }

  /** Asks for a sync; coalesces requests that arrive while one runs. */
  requestSync(): void {
    if (this.#abort.signal.aborted) return;
    if (this.#syncing) {
      this.#syncAgain = true;
      return;
    }
    this.#syncing = this.#sync()
      .catch((error: unknown) => this.log(`sync: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => {
        this.#syncing = undefined;
        if (this.#syncAgain) {
          this.#syncAgain = false;
          this.requestSync();
        }
      });
  }

  /** Compares the Pods bound to this node with the workers, and starts, updates or ends workers. */
  async #sync(): Promise<void> {
    const { api } = this.#config;
    const pods = await api.list<Pod>(`/api/v1/pods?fieldSelector=${encode(`spec.nodeName=${this.name}`)}`);
    if (this.#abort.signal.aborted) return;
    const seen = new Set<string>();
    for (const pod of pods) {
      if (this.#abort.signal.aborted) return;
      const uid = pod.metadata?.uid ?? '';
      seen.add(uid);
      let worker = this.#workers.get(uid);
      if (!worker) {
        const terminal = pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
        if (pod.metadata?.deletionTimestamp || terminal) {
          // Nothing to run (a terminal Pod, or one deleted before we saw it): only the final delete is ours.
          if (pod.metadata?.deletionTimestamp) {
            await api.delete(
              `/api/v1/namespaces/${encode(pod.metadata?.namespace ?? '')}/pods/${encode(pod.metadata?.name ?? '')}`,
              { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid } },
            );
          }
          continue;
        }
        worker = new PodWorker(this.#context, pod);
        this.#workers.set(uid, worker);
        this.log(`${worker.key}: starting (uid ${uid})`);
        worker.start();
      }
      worker.update(pod);
    }
    for (const [uid, worker] of this.#workers) {
      if (seen.has(uid)) continue;
      // The Pod is gone from the API (deleted for good, maybe forcibly): stop whatever still runs.
      this.#workers.delete(uid);
      this.log(`${worker.key}: gone`);
      void worker.kill(worker.graceMs()).then(() => worker.release());
    }
  }

  /**
   * Stops every container (SIGTERM, SIGKILL after `graceMs`), then removes the Node and its Lease
   * from the API, best effort (the API server may already be gone).
   */
  async stop(graceMs = 2_000): Promise<void> {
    this.#abort.abort();
    this.#crashed = false;
    for (const timer of this.#timers) clearInterval(timer);
    // A sync in flight may wait on an API server that a test has killed; it starts nothing once aborted.
    await Promise.race([this.#syncing, sleep(1_000, undefined, { ref: false })]);
    const workers = [...this.#workers.values()];
    await Promise.all(workers.map((worker) => worker.kill(graceMs)));
    for (const worker of workers) worker.release();
    await this.#watch;
    const { api } = this.#config;
    await Promise.race([
      Promise.allSettled([
        api.delete(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encode(this.name)}`),
        api.delete(`/api/v1/nodes/${encode(this.name)}`),
      ]),
      sleep(3_000, undefined, { ref: false }),
    ]);
  }
}
