/**
 * Real nodes for a control plane: what must hold before the API server starts (root, the tools,
 * the images, the host network with its blackhole), and the nodes themselves once it runs.
 */
import { execFile } from 'node:child_process';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ProgressListener } from '../binaries/build-progress.js';
import { ensureCoreDns, ensureNetworkPolicyEnforcer, ensureNodeBinaries } from '../binaries/ensure-binaries.js';
import { ensureNodeTools } from '../binaries/ensure-node-tools.js';
import { buildKubeconfig, type Kubeconfig, writeKubeconfig } from '../credentials/kubeconfig.js';
import { type ClusterDns, startClusterDns } from '../dns/cluster-dns.js';
import { COREDNS_USER } from '../dns/cluster-dns-plan.js';
import { UnsupportedError } from '../errors.js';
import { Api } from '../process-node/api.js';
import { LocalProvisioner } from '../process-node/volumes/provisioner.js';
import { ensureTestImages } from '../test-images/ensure-test-images.js';
import { addNodeRoutes, claimHostNetwork, releaseHostNetwork, slotCgroupPrefix } from './host-network.js';
import { type NetworkPlan, planNetwork } from './network-plan.js';
import { buildEnforcerRbac, ENFORCER_USER } from './network-policy-enforcer.js';
import { cgroupHierarchies, createCgroupRoot } from './node-namespace.js';
import { waitForNodesReady } from './nodes-ready.js';
import { type NodePrograms, RealNode } from './real-node.js';

const exec = promisify(execFile);

/**
 * Real nodes: each runs containerd, a kubelet, kube-proxy and a NetworkPolicy enforcer (all built
 * or fetched by testenv) in its own network and mount namespace, with its own Pod range on a
 * bridge. Pods run real OCI images through runc, probes go through the kubelet, Services through
 * kube-proxy, and NetworkPolicies are enforced by kube-router's netpol controller. Pods resolve
 * `cluster.local` names through the cluster DNS: CoreDNS on the host behind `kube-system/kube-dns`,
 * which answers NXDOMAIN for every other name.
 *
 * Needs root on Linux (namespaces, cgroups, routes). No registry is reachable: every image a
 * Pod uses must be in `imageArchives` (OCI archives, imported at node start) and run with
 * `imagePullPolicy: IfNotPresent` or `Never`.
 */
export interface RealNodesOptions {
  /** How many nodes: `real-node-0` … Default 1. */
  readonly count?: number;
  /** OCI image archives to import into every node (the sandbox image is always imported). */
  readonly imageArchives?: readonly string[];
  /** kube-proxy's mode. Default `iptables` (nf_tables backend). */
  readonly proxyMode?: 'iptables' | 'nftables';
  /** Name of the default StorageClass, whose claims get directories of the machine. Default `kanri-local`. */
  readonly storageClassName?: string;
  /**
   * Enforce NetworkPolicies, as a network plugin that supports them does: kube-router's
   * NetworkPolicy controller runs on every node. Default true.
   */
  readonly networkPolicies?: boolean;
}

/** Why real nodes cannot run here, or undefined when they can. */
export async function realNodesUnsupportedReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `real nodes need Linux; this is ${process.platform}`;
  if (process.getuid?.() !== 0) return 'real nodes need root (namespaces, cgroups and routes); testenv runs as a user';
  for (const tool of ['ip', 'nsenter', 'unshare', 'mount', 'sysctl']) {
    const found = await exec('sh', ['-c', `command -v ${tool}`]).then(
      () => true,
      () => false,
    );
    if (!found) return `real nodes need \`${tool}\` (iproute2 / util-linux / procps), which is not on PATH`;
  }
  return undefined;
}

/** What the control plane needs to know before its API server starts, and how to start the nodes after. */
export interface RealNodesPlan {
  readonly network: NetworkPlan;
  /** Addresses the API server's certificate must name: its bridge address and the `kubernetes` Service's. */
  readonly apiServerAddresses: readonly string[];
  /** kube-apiserver flags (appended after testenv's own, so they win). */
  readonly apiServerArgs: (files: { kubeletClientCert: string; kubeletClientKey: string }) => string[];
  start(context: RealNodesContext): Promise<RealNodeSet>;
  /** Releases the host network; call after every process that uses it has stopped. */
  release(): Promise<void>;
}

export interface RealNodesContext {
  readonly server: string;
  readonly adminKubeconfig: Kubeconfig;
  readonly caPem: string;
  readonly caFile: string;
  /** Issues a client certificate. */
  readonly issue: (commonName: string, organizations: string[]) => Promise<{ certPem: string; keyPem: string }>;
  readonly dataDir: string;
  readonly logsDir: string;
  readonly timeoutMs: number;
}

export interface RealNodeSet {
  readonly nodes: readonly RealNode[];
  readonly names: readonly string[];
  stop(): Promise<void>;
}

/**
 * Checks the machine, fetches or builds what the nodes run (containerd and friends from Debian,
 * kubelet, kube-proxy, the NetworkPolicy enforcer and CoreDNS from Go modules, the sandbox image), then claims the network
 * (`prepareRealNodes`).
 */
export async function planRealNodes(options: RealNodesOptions, onProgress?: ProgressListener): Promise<RealNodesPlan> {
  const reason = await realNodesUnsupportedReason();
  if (reason) throw new UnsupportedError(reason);
  const [tools, binaries, images, enforcer, coredns] = await Promise.all([
    ensureNodeTools({ onProgress }),
    ensureNodeBinaries({ onProgress }),
    ensureTestImages({ onProgress }),
    options.networkPolicies === false ? undefined : ensureNetworkPolicyEnforcer({ onProgress }),
    ensureCoreDns({ onProgress }),
  ]);
  const programs: NodePrograms = {
    kubelet: binaries.kubelet,
    kubeProxy: binaries['kube-proxy'],
    containerd: join(tools.binDir, 'containerd'),
    ctr: join(tools.binDir, 'ctr'),
    runc: join(tools.binDir, 'runc'),
    cniBinDir: tools.cniBinDir,
    ...(enforcer ? { networkPolicy: enforcer } : {}),
    env: { ...tools.env },
  };
  return prepareRealNodes(options, programs, coredns, images.pause.archive);
}

/**
 * Claims a network slot and installs its blackhole: after this, nothing sent to the slot's Pod or
 * Service ranges can leave the machine, even before any node exists. The machine was checked by
 * `planRealNodes`.
 */
async function prepareRealNodes(
  options: RealNodesOptions,
  tools: NodePrograms,
  coredns: string,
  pauseArchive: string,
): Promise<RealNodesPlan> {
  const count = options.count ?? 1;
  const network = await claimHostNetwork((slot) => planNetwork(slot, count, (i) => `real-node-${i}`));
  return {
    network,
    apiServerAddresses: [network.hostAddress, network.kubernetesServiceIp],
    apiServerArgs: (files) => [
      `--bind-address=${network.hostAddress}`,
      `--advertise-address=${network.hostAddress}`,
      `--service-cluster-ip-range=${network.serviceCidr}`,
      // A real node's address is not loopback, so the `kubernetes` Service can list the API server.
      '--endpoint-reconciler-type=lease',
      '--authorization-mode=Node,RBAC',
      // For logs, exec and port-forward, which the API server asks of the kubelet.
      `--kubelet-client-certificate=${files.kubeletClientCert}`,
      `--kubelet-client-key=${files.kubeletClientKey}`,
      '--kubelet-preferred-address-types=InternalIP',
    ],
    start: (context) =>
      startNodes(network, options, tools, coredns, [pauseArchive, ...(options.imageArchives ?? [])], context),
    release: () => releaseHostNetwork(network),
  };
}

async function startNodes(
  network: NetworkPlan,
  options: RealNodesOptions,
  tools: NodePrograms,
  coredns: string,
  imageArchives: readonly string[],
  context: RealNodesContext,
): Promise<RealNodeSet> {
  const hierarchies = await cgroupHierarchies();
  const nodes: RealNode[] = [];
  const api = new Api(context.adminKubeconfig);
  // Every node sees the machine's filesystem (only /run, /var/lib and /var/log are its own), so a
  // volume directory serves a Pod on any node, as on process nodes. Not the machine's later mounts:
  // each node's mount namespace is a private copy, so a sized volume is mounted in each as well.
  const provisioner = new LocalProvisioner({
    api,
    storageClassName: options.storageClassName ?? 'kanri-local',
    volumesDir: join(context.dataDir, 'volumes'),
    log: (message) => void appendFile(join(context.logsDir, 'provisioner.log'), `${message}\n`).catch(() => {}),
    waitForConsumer: true,
    mountNamespaces: () => nodes.flatMap((n) => n.namespacePid ?? []),
  });
  let dns: ClusterDns | undefined;
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await dns?.stop();
    await provisioner.stop();
    await api.destroy();
  };
  try {
    const kubeconfigFor = async (dir: string, name: string, commonName: string, organizations: string[]) => {
      const cert = await context.issue(commonName, organizations);
      const path = join(dir, `${name}.kubeconfig`);
      await writeKubeconfig(
        path,
        buildKubeconfig({
          clusterName: 'kanri-testenv',
          server: context.server,
          caPem: context.caPem,
          userName: commonName,
          certPem: cert.certPem,
          keyPem: cert.keyPem,
        }),
      );
      return path;
    };
    if (tools.networkPolicy) {
      const [role, binding] = buildEnforcerRbac();
      await api.create('/apis/rbac.authorization.k8s.io/v1/clusterroles', role);
      await api.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', binding);
    }
    // Before any kubelet starts: its Pods' first lookups go to the cluster DNS.
    const dnsDir = join(context.dataDir, 'cluster-dns');
    await mkdir(dnsDir, { recursive: true });
    dns = await startClusterDns({
      binary: coredns,
      kubeconfig: await kubeconfigFor(dnsDir, 'coredns', COREDNS_USER, []),
      hostAddress: network.hostAddress,
      clusterDnsIp: network.clusterDnsIp,
      dir: dnsDir,
      logsDir: context.logsDir,
      api,
      timeoutMs: context.timeoutMs,
    });
    for (const node of network.nodes) {
      const dir = join(context.dataDir, 'real-nodes', node.name);
      await mkdir(dir, { recursive: true });
      const cgroupRoot = `${slotCgroupPrefix(network.slot)}${node.name}`;
      await createCgroupRoot(cgroupRoot, hierarchies);
      const realNode = new RealNode({
        network,
        node,
        dir,
        logsDir: context.logsDir,
        cgroupRoot,
        hierarchies,
        tools,
        imageArchives,
        kubeletKubeconfig: await kubeconfigFor(dir, 'kubelet', `system:node:${node.name}`, ['system:nodes']),
        kubeProxyKubeconfig: await kubeconfigFor(dir, 'kube-proxy', 'system:kube-proxy', []),
        ...(tools.networkPolicy
          ? { networkPolicyKubeconfig: await kubeconfigFor(dir, 'network-policy', ENFORCER_USER, []) }
          : {}),
        clientCaFile: context.caFile,
        proxyMode: options.proxyMode ?? 'iptables',
      });
      nodes.push(realNode);
      await writeFile(join(dir, 'address'), `${node.address}\n`);
    }
    await provisioner.start();
    await Promise.all(nodes.map((n) => n.start()));
    await addNodeRoutes(network);
    await waitForNodesReady(context, nodes, context.timeoutMs);
    return { nodes, names: nodes.map((n) => n.name), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
