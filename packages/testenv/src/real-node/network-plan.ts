/**
 * Pure planning of one control plane's real-node network: which addresses, interfaces and routes
 * it uses, so that every packet to its Pod and Service ranges stays on this machine.
 *
 * Each control plane takes a slot `k` (0–63) and owns everything derived from it:
 * - a host bridge `kanri-br<k>` on `172.30.k.0/24`: the host is `.1` (the API server listens
 *   there), node `i` is `.(10+i)` on a veth whose other end is `eth0` in the node's namespace;
 * - the supernet `10.(128+k).0.0/16`, blackholed on the host as a whole, inside which node `i`'s
 *   Pods get `10.(128+k).i.0/24` and Services get `10.(128+k).255.0/24`.
 *
 * The host routes each node's Pod range to that node and the Service range to node 0 (whose
 * kube-proxy translates it); whatever else falls in the supernet hits the blackhole. Nodes get no
 * default route at all: a Pod that dials the internet gets "network unreachable" from its own
 * node, instead of a packet that leaves through the machine's default interface.
 */

/** The most nodes one control plane can have: node addresses are `.10`–`.73`, Pod ranges `.0`–`.63`. */
export const MAX_REAL_NODES = 64;
/** How many control planes with real nodes can run on one machine at once. */
export const SLOT_COUNT = 64;

/** One route: `blackhole` drops locally, `via` forwards to a neighbour on the bridge, `link` asks the link itself (ARP). */
export type Route =
  | { readonly kind: 'blackhole'; readonly destination: string }
  | { readonly kind: 'via'; readonly destination: string; readonly gateway: string }
  | { readonly kind: 'link'; readonly destination: string; readonly device: string };

export interface NodeAddressing {
  readonly name: string;
  /** The node's address on the bridge (its `eth0`), also its InternalIP. */
  readonly address: string;
  /** The host end of its veth pair. */
  readonly hostInterface: string;
  /** Its Pods' range. */
  readonly podCidr: string;
  /** Routes inside the node's namespace: other nodes' Pods, and the Service range on its link. */
  readonly routes: readonly Route[];
}

export interface NetworkPlan {
  readonly slot: number;
  readonly bridge: string;
  /** The bridge's network, e.g. `172.30.3.0/24`. */
  readonly bridgeCidr: string;
  /** The host's address on the bridge: the API server's bind and advertise address. */
  readonly hostAddress: string;
  readonly prefixLength: 24;
  /** Everything of this control plane's Pods and Services, blackholed on the host. */
  readonly supernet: string;
  /** The union of all nodes' Pod ranges (kube-proxy's `clusterCIDR`). */
  readonly clusterCidr: string;
  readonly serviceCidr: string;
  /** The `kubernetes` Service's ClusterIP: the Service range's first address. */
  readonly kubernetesServiceIp: string;
  /**
   * The cluster DNS Service's ClusterIP (the kubelets' `clusterDNS`): `.10`, as kubeadm picks,
   * inside the band the API server allocates dynamic ClusterIPs from last, so no Service created
   * before it can take it.
   */
  readonly clusterDnsIp: string;
  /** Routes on the host, in the order they must be added (the blackhole first, before any node exists). */
  readonly hostRoutes: readonly Route[];
  readonly nodes: readonly NodeAddressing[];
}

/** A range in `a.b.c.d/len` form, as a 32-bit start and a length. */
export function parseCidr(cidr: string): { start: number; length: number } {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!match) throw new Error(`"${cidr}" is not an IPv4 range (a.b.c.d/len)`);
  const octets = match.slice(1, 5).map(Number);
  const length = Number(match[5]);
  if (octets.some((o) => o > 255) || length > 32) throw new Error(`"${cidr}" is not an IPv4 range`);
  const address = octets.reduce((sum, o) => sum * 256 + o, 0);
  const size = 2 ** (32 - length);
  return { start: address - (address % size), length };
}

/** True when the two ranges share any address. */
export function cidrsOverlap(a: string, b: string): boolean {
  const x = parseCidr(a);
  const y = parseCidr(b);
  const xEnd = x.start + 2 ** (32 - x.length);
  const yEnd = y.start + 2 ** (32 - y.length);
  return x.start < yEnd && y.start < xEnd;
}

/** Interface names may hold 15 characters: `kanri-br63` and `kanri-63-n63` fit. */
export function bridgeName(slot: number): string {
  return `kanri-br${slot}`;
}

/** Plans slot `slot` with `count` nodes named by `nodeName(i)`. */
export function planNetwork(slot: number, count: number, nodeName: (i: number) => string): NetworkPlan {
  if (!Number.isInteger(slot) || slot < 0 || slot >= SLOT_COUNT)
    throw new Error(`slot ${slot} is not 0–${SLOT_COUNT - 1}`);
  if (!Number.isInteger(count) || count < 1 || count > MAX_REAL_NODES) {
    throw new Error(`realNodes.count is ${count}; it must be 1–${MAX_REAL_NODES}`);
  }
  const second = 128 + slot;
  const hostAddress = `172.30.${slot}.1`;
  const serviceCidr = `10.${second}.255.0/24`;
  const nodeAddress = (i: number) => `172.30.${slot}.${10 + i}`;
  const podCidr = (i: number) => `10.${second}.${i}.0/24`;
  const indices = Array.from({ length: count }, (_, i) => i);
  const nodes = indices.map((i) => ({
    name: nodeName(i),
    address: nodeAddress(i),
    hostInterface: `kanri-${slot}-n${i}`,
    podCidr: podCidr(i),
    routes: [
      ...indices
        .filter((j) => j !== i)
        .map((j): Route => ({ kind: 'via', destination: podCidr(j), gateway: nodeAddress(j) })),
      // The node's own kube-proxy translates every Service it knows before this route matters, but a
      // connection from the node itself needs some route to exist. On the link, an address without
      // a Service fails once nobody answers ARP; through the host it would bounce between the host
      // and node 0 until its TTL ran out.
      { kind: 'link', destination: serviceCidr, device: 'eth0' } as Route,
    ],
  }));
  return {
    slot,
    bridge: bridgeName(slot),
    bridgeCidr: `172.30.${slot}.0/24`,
    hostAddress,
    prefixLength: 24,
    supernet: `10.${second}.0.0/16`,
    clusterCidr: `10.${second}.0.0/18`,
    serviceCidr,
    kubernetesServiceIp: `10.${second}.255.1`,
    clusterDnsIp: `10.${second}.255.10`,
    hostRoutes: [
      { kind: 'blackhole', destination: `10.${second}.0.0/16` },
      ...nodes.map((n): Route => ({ kind: 'via', destination: n.podCidr, gateway: n.address })),
      { kind: 'via', destination: serviceCidr, gateway: nodeAddress(0) },
    ],
    nodes,
  };
}

/** `ip route` arguments that add (or, with `del`, remove) `route`. */
export function ipRouteArgs(verb: 'add' | 'del', route: Route): string[] {
  switch (route.kind) {
    case 'blackhole':
      return ['route', verb, 'blackhole', route.destination];
    case 'via':
      return ['route', verb, route.destination, 'via', route.gateway];
    case 'link':
      return ['route', verb, route.destination, 'dev', route.device];
  }
}

/**
 * The machine's routes that `plan` would collide with (another network already using its bridge
 * range or supernet), as `ip route` prints them; empty when the slot is free to use.
 */
export function conflictingRoutes(plan: NetworkPlan, routeLines: readonly string[]): string[] {
  const ours = [plan.bridgeCidr, plan.supernet];
  return routeLines.filter((line) => {
    const destination = line
      .trim()
      .split(/\s+/)
      .find((word) => /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(word));
    if (!destination || line.startsWith('default')) return false;
    const cidr = destination.includes('/') ? destination : `${destination}/32`;
    return ours.some((range) => cidrsOverlap(range, cidr));
  });
}
