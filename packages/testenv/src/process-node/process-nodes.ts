/**
 * Starting and stopping the process nodes of a control plane, with their shared pod network,
 * process-group watchdog and local volume provisioner.
 */
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kubeconfig } from '../credentials/kubeconfig.js';
import { type FaultProxy, startFaultProxy } from '../fault-proxy.js';
import { Api } from './api.js';
import { GroupReaper } from './group-reaper.js';
import type { ImageMappings } from './image.js';
import type { ProcessContainer } from './node-context.js';
import { PodNetwork } from './pod-network.js';
import { type ProcessNode, ProcessNodeAgent } from './process-node.js';
import { readPasswd } from './users.js';
import { LocalProvisioner } from './volumes/provisioner.js';

/**
 * Process nodes: Nodes that run Pods' containers as real local processes, standing in for
 * kubelet and a container runtime, which this machine does not have.
 *
 * What they do: register a Ready Node (label `kanri.dev/process-node: "true"`) and renew its
 * Lease; run each container of the Pods bound to them as a process in its own process group,
 * with the Pod's environment (`env`, `valueFrom`, `envFrom`), its own loopback address
 * (127.X.y.z, reported as `status.podIP`), its volumes as local directories (told to the process
 * in `KANRI_VOLUME_MOUNTS`; see `resolveMountPath`) and a `KUBECONFIG` for the Pod's
 * ServiceAccount (a bound token from the TokenRequest API, so RBAC is real); apply probes,
 * restart policies and graceful deletion; and write the Pod's status as the kubelet would.
 * A default StorageClass (`kanri-local`) provisions claims as local directories.
 *
 * What they are not: there is no isolation (processes share the machine's filesystem, network
 * and PID space), no resource limits, no image pulls (each image is mapped to a local program),
 * no cluster DNS and no kube-proxy (reach Services with `serviceAddress`), and EndpointSlices stay
 * empty for their Pods (the API server rejects loopback endpoint addresses). Processes that leave
 * their process group (daemonise with setsid) escape clean-up. Containers run as the mapped
 * user only when testenv runs as root; otherwise as testenv's own user. Not supported: resource
 * limits, read-only mounts, lifecycle hooks, ephemeral and CSI volumes, `kubectl logs`/`exec`
 * (read `findProcessContainer(…).logFile` instead). A Pod with `automountServiceAccountToken:
 * false` gets no `KUBECONFIG`, as it would get no token. With an existing cluster
 * (`KANRI_USE_EXISTING_CLUSTER`) the option is ignored: the cluster's own nodes run the Pods.
 */
export interface ProcessNodesOptions {
  /** How many nodes: `process-node-0` … Default 1. */
  readonly count?: number;
  /**
   * Image reference → how to run it. A key without a tag matches every tag and digest of that
   * repository; a key with a tag matches only that tag (and wins).
   */
  readonly images: ImageMappings;
  /** Capacity (and allocatable) of each node. Default cpu 16, memory 64Gi, pods 110, ephemeral-storage 100Gi. */
  readonly capacity?: Readonly<Record<string, string>>;
  /** The longest grace period honoured when a Pod is deleted, in seconds. Default 10. */
  readonly maxGracePeriodSeconds?: number;
  /** Name of the default StorageClass the local provisioner serves. Default `kanri-local`. */
  readonly storageClassName?: string;
  /**
   * Give each node a {@link FaultProxy} in front of the API server (`node.apiProxy`) and point its
   * Pods' KUBECONFIG at it, so a test can cut one node's Pods off the API server. Default false.
   */
  readonly apiProxy?: boolean;
}

export interface ProcessNodeSet {
  readonly nodes: readonly ProcessNode[];
  readonly names: readonly string[];
  /** The pod network's CIDR, e.g. `127.3.0.0/16`. */
  readonly podCidr: string;
  stop(): Promise<void>;
}

export const DEFAULT_CAPACITY = { cpu: '16', memory: '64Gi', pods: '110', 'ephemeral-storage': '100Gi' } as const;

/**
 * Finds a container of a Pod on the process nodes: its current PID (undefined while it is not
 * running), every PID it had, its log file and restart count.
 *
 * @example
 * ```ts
 * const db = findProcessContainer(cp.processNodes, 'default', 'db-0', 'postgres');
 * if (db?.pid) process.kill(db.pid, 'SIGKILL'); // a crash: the node restarts it per restartPolicy
 * const log = await readFile(db?.logFile ?? '', 'utf8');
 * ```
 */
export function findProcessContainer(
  nodes: readonly ProcessNode[],
  namespace: string,
  pod: string,
  container?: string,
): ProcessContainer | undefined {
  return nodes
    .flatMap((node) => node.containers())
    .find((c) => c.namespace === namespace && c.pod === pod && (container === undefined || c.container === container));
}

export async function startProcessNodes(input: {
  readonly options: ProcessNodesOptions;
  readonly kubeconfig: Kubeconfig;
  readonly caPem: string;
  readonly dataDir: string;
  readonly logsDir: string;
}): Promise<ProcessNodeSet> {
  const { options, dataDir } = input;
  // Containers may run as another user: they must be able to pass through the data directory
  // to their own volumes (which are theirs); they still cannot list it or read the rest.
  await chmod(dataDir, 0o711);
  await mkdir(join(dataDir, 'process-nodes'), { recursive: true, mode: 0o711 });
  const api = new Api(input.kubeconfig);
  const network = await PodNetwork.acquire();
  const reaper = new GroupReaper();
  const passwd = await readPasswd();
  const agents: ProcessNodeAgent[] = [];
  const proxies: FaultProxy[] = [];
  const provisioner = new LocalProvisioner({
    api,
    storageClassName: options.storageClassName ?? 'kanri-local',
    volumesDir: join(dataDir, 'volumes'),
    log: (message) => agents[0]?.log(message),
  });
  const stop = async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await provisioner.stop();
    await reaper.close();
    await network.close();
    await api.destroy();
  };
  try {
    for (let i = 0; i < (options.count ?? 1); i++) {
      const name = `process-node-${i}`;
      const apiProxy = options.apiProxy ? await startFaultProxy(api.server) : undefined;
      if (apiProxy) proxies.push(apiProxy);
      agents.push(
        new ProcessNodeAgent({
          api,
          name,
          network,
          reaper,
          images: options.images,
          dataDir,
          logFile: join(input.logsDir, `${name}.log`),
          server: apiProxy?.url ?? api.server,
          apiProxy,
          caPem: input.caPem,
          capacity: options.capacity ?? DEFAULT_CAPACITY,
          maxGracePeriodSeconds: options.maxGracePeriodSeconds ?? 10,
          passwd,
        }),
      );
    }
    await provisioner.start();
    await Promise.all(agents.map((agent) => agent.start()));
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: agents, names: agents.map((a) => a.name), podCidr: network.cidr, stop };
}
