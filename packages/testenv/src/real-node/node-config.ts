/**
 * Pure builders of one real node's configuration files: containerd's, the CNI network's, the
 * kubelet's and kube-proxy's. Every path a daemon writes is under the node's own directory or in
 * its private mount namespace, so that two nodes (and the machine) never share state.
 */
import { stringify } from 'yaml';
import { PAUSE_IMAGE } from '../test-images/test-image-pins.js';

export interface RuntimeConfigInput {
  /** The node's private directory. */
  readonly dir: string;
  /** containerd's socket (under `dir`). */
  readonly socket: string;
  readonly runc: string;
  readonly cniBinDir: string;
  readonly cniConfDir: string;
}

/** containerd 1.6's configuration (TOML, version 2). */
export function containerdConfig(input: RuntimeConfigInput): string {
  const q = JSON.stringify;
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `${[
    'version = 2',
    `root = ${q(`${input.dir}/containerd/root`)}`,
    `state = ${q(`${input.dir}/containerd/state`)}`,
    // Snapshotters that cannot work here only log errors at every start.
    'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]',
    '[grpc]',
    `  address = ${q(input.socket)}`,
    '[ttrpc]',
    `  address = ${q(`${input.socket}.ttrpc`)}`,
    `[${cri}]`,
    `  sandbox_image = ${q(PAUSE_IMAGE)}`,
    // This VM lacks CAP_SYS_RESOURCE: without it, lowering a sandbox's oom_score_adj fails and
    // runc reports only "can't get final child's PID from pipe: EOF".
    '  restrict_oom_score_adj = true',
    '  enable_selinux = false',
    `[${cri}.cni]`,
    `  bin_dir = ${q(input.cniBinDir)}`,
    `  conf_dir = ${q(input.cniConfDir)}`,
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.containerd.runtimes.runc.options]`,
    '  SystemdCgroup = false',
    `  BinaryName = ${q(input.runc)}`,
  ].join('\n')}\n`;
}

/** The node's CNI network: a bridge with host-local addresses from its Pod range, no masquerade (nothing leaves). */
export function cniConfig(input: { readonly podCidr: string; readonly ipamDir: string }): string {
  return `${JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'kanri',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: input.ipamDir,
            ranges: [[{ subnet: input.podCidr }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export interface KubeletConfigInput {
  readonly socket: string;
  readonly address: string;
  /** The node's cgroup root on every v1 hierarchy (the kubelet refuses to start unless it exists). */
  readonly cgroupRoot: string;
  readonly clientCaFile: string;
  readonly resolvConf: string;
  /** The cluster DNS Service's ClusterIP, the nameserver of every `ClusterFirst` Pod. */
  readonly clusterDns: string;
  readonly clusterDomain: string;
}

/** The KubeletConfiguration of a real node on this machine (cgroup v1, no systemd, no swap check). */
export function kubeletConfig(input: KubeletConfigInput): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    cgroupDriver: 'cgroupfs',
    cgroupRoot: input.cgroupRoot,
    // Only cgroup v1 is mounted here; 1.35 refuses it unless told otherwise, 1.34 warns.
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${input.socket}`,
    address: input.address,
    readOnlyPort: 0,
    // The node's own loopback: each node's namespace has one, so every node can use the default port.
    healthzBindAddress: '127.0.0.1',
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: input.clientCaFile },
    },
    authorization: { mode: 'Webhook' },
    // Lowering its own score needs CAP_SYS_RESOURCE, which this VM does not grant.
    oomScoreAdj: 0,
    // The kubelet sets vm.overcommit_memory and kernel.panic*; the node's mount namespace puts
    // files over those /proc/sys entries, so the machine's own values are never changed.
    protectKernelDefaults: false,
    // No registry can be pulled from: an image the GC removed (the sandbox image above all) is gone for good.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Tests share one disk: the default thresholds would evict Pods on a machine that is merely busy.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    // Empty: a Pod's resolv.conf names the cluster DNS alone, never one of the machine's resolvers.
    resolvConf: input.resolvConf,
    // Without it every Pod warns MissingClusterDNS and falls back to the (empty) resolv.conf above.
    clusterDNS: [input.clusterDns],
    clusterDomain: input.clusterDomain,
    serializeImagePulls: false,
    syncFrequency: '10s',
    nodeStatusUpdateFrequency: '4s',
  });
}

export interface KubeProxyConfigInput {
  readonly kubeconfig: string;
  readonly nodeName: string;
  readonly address: string;
  readonly clusterCidr: string;
  readonly mode: 'iptables' | 'nftables';
}

/** kube-proxy's configuration: rules in the node's own namespace, NodePorts on its bridge address only. */
export function kubeProxyConfig(input: KubeProxyConfigInput): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: input.kubeconfig },
    mode: input.mode,
    // Traffic to a Service from outside this range (the host) is masqueraded, so replies return
    // through the node that translated it.
    clusterCIDR: input.clusterCidr,
    hostnameOverride: input.nodeName,
    bindAddress: input.address,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    nodePortAddresses: [`${input.address}/32`],
    // The conntrack table is the machine's; kube-proxy must not try to resize it.
    conntrack: { maxPerCore: 0 },
  });
}
