/**
 * The cluster DNS of real nodes, planned: CoreDNS's Corefile, what it may read from the API (its
 * ClusterRole), and the `kube-system/kube-dns` Service with the EndpointSlice that points it at
 * CoreDNS on the host. Pure.
 *
 * CoreDNS runs on the host, bound to the control plane's bridge address only, so every node
 * reaches it through the bridge, as it reaches the API server; kube-proxy on each node translates
 * the Service's fixed ClusterIP (the kubelets' `clusterDNS`) to it. It forwards nothing: a name
 * outside `cluster.local` gets NXDOMAIN, so no query ever leaves the machine.
 */
import { userClusterRole } from '../credentials/user-cluster-role.js';

/** The cluster's DNS domain: the kubelets' `clusterDomain`, the zone CoreDNS serves from the API. */
export const CLUSTER_DOMAIN = 'cluster.local';
/** CoreDNS's user: a client certificate with this common name, bound to a ClusterRole of the same name. */
export const COREDNS_USER = 'kanri-testenv:coredns';
/** Marks the EndpointSlice as testenv's, so that no controller takes it for its own. */
export const MANAGED_BY = 'testenv.kanri.dev';
/** The readiness endpoint's port, on the bridge address beside DNS's 53. */
export const READY_PORT = 8181;

export interface ClusterDnsInput {
  /** The host's bridge address: CoreDNS listens there, and the EndpointSlice points there. */
  readonly hostAddress: string;
  /** The kube-dns Service's ClusterIP: the kubelets' `clusterDNS`. */
  readonly clusterDnsIp: string;
}

/**
 * CoreDNS's configuration. Two server blocks on one port: CoreDNS hands each query to the block
 * of the longest zone that contains it, so `cluster.local` and the reverse zone go to the
 * kubernetes plugin, and every other name to the catch-all, which answers NXDOMAIN itself. No
 * `forward`: nothing is asked of the machine's resolvers or of the internet.
 *
 * @example
 * ```ts
 * corefile({ hostAddress: '172.30.3.1', clusterDnsIp: '10.131.255.10' }, '/d/coredns.kubeconfig');
 * // 'cluster.local in-addr.arpa:53 {\n  bind 172.30.3.1\n …'
 * ```
 */
export function corefile(input: ClusterDnsInput, kubeconfig: string): string {
  const bind = `  bind ${input.hostAddress}`;
  return `${[
    `${CLUSTER_DOMAIN}:53 in-addr.arpa:53 {`,
    bind,
    '  errors',
    `  ready ${input.hostAddress}:${READY_PORT}`,
    `  kubernetes ${CLUSTER_DOMAIN} in-addr.arpa {`,
    `    kubeconfig ${kubeconfig}`,
    // Pod records (a-b-c-d.ns.pod.cluster.local) would need every Pod watched; nothing here uses them.
    '    pods disabled',
    '  }',
    '}',
    '.:53 {',
    bind,
    '  errors',
    '  template ANY ANY {',
    '    rcode NXDOMAIN',
    '  }',
    '}',
  ].join('\n')}\n`;
}

/**
 * What the kubernetes plugin reads with `pods disabled`, and nothing more: it lists and watches
 * Services, EndpointSlices and Namespaces (plugin/kubernetes/controller.go). It writes nothing.
 *
 * @example
 * ```ts
 * for (const object of buildCoreDnsRbac()) await api.create(pathOf(object), object);
 * ```
 */
export function buildCoreDnsRbac(): readonly [Record<string, unknown>, Record<string, unknown>] {
  return userClusterRole(COREDNS_USER, [
    { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
  ]);
}

const dnsPorts = [
  { name: 'dns', port: 53, protocol: 'UDP' },
  { name: 'dns-tcp', port: 53, protocol: 'TCP' },
] as const;

/**
 * The `kube-system/kube-dns` Service, as clusters name it, at the fixed ClusterIP the kubelets
 * are given. Selectorless: its endpoint is a process on the host, not a Pod.
 */
export function buildKubeDnsService(input: ClusterDnsInput): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'kube-dns',
      namespace: 'kube-system',
      labels: { 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS' },
    },
    spec: {
      clusterIP: input.clusterDnsIp,
      ports: dnsPorts.map((p) => ({ ...p, targetPort: p.port })),
    },
  };
}

/** The kube-dns Service's one endpoint: CoreDNS on the host's bridge address. */
export function buildKubeDnsEndpointSlice(input: ClusterDnsInput): Record<string, unknown> {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'kube-dns-host',
      namespace: 'kube-system',
      labels: {
        'kubernetes.io/service-name': 'kube-dns',
        'endpointslice.kubernetes.io/managed-by': MANAGED_BY,
      },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [input.hostAddress], conditions: { ready: true } }],
    ports: dnsPorts.map((p) => ({ ...p })),
  };
}

/** Where each object of the cluster DNS is created, in order (its namespace first, the Service before its slice). */
export function clusterDnsObjects(input: ClusterDnsInput): readonly { path: string; body: Record<string, unknown> }[] {
  const [role, binding] = buildCoreDnsRbac();
  return [
    // The API server creates kube-system itself, shortly after it starts serving; the nodes may be
    // started before that (creating it first is harmless: an existing one is left as it is).
    { path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } } },
    { path: '/apis/rbac.authorization.k8s.io/v1/clusterroles', body: role },
    { path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', body: binding },
    { path: '/api/v1/namespaces/kube-system/services', body: buildKubeDnsService(input) },
    { path: '/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices', body: buildKubeDnsEndpointSlice(input) },
  ];
}
