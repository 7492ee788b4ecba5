/**
 * The NetworkPolicy enforcer of real nodes: kube-router's netpol controller (`kube-router-netpol`,
 * built from go/kube-router), one per node in the node's network namespace beside kube-proxy,
 * turning the cluster's NetworkPolicies into iptables rules and ipsets for the Pods on that node.
 * What it may read (its ClusterRole) and how it is started. Pure.
 */

import { userClusterRole } from '../credentials/user-cluster-role.js';

/** The enforcer's user: a client certificate with this common name, bound to a ClusterRole of the same name. */
export const ENFORCER_USER = 'kanri-testenv:network-policy';

/**
 * What the netpol controller reads, and nothing more: its own Node (for the node's address, which
 * tells its Pods from the others), and the Pods, Namespaces and NetworkPolicies the rules derive
 * from. It writes nothing to the API.
 *
 * @example
 * ```ts
 * for (const object of buildEnforcerRbac()) await api.create(pathOf(object), object);
 * ```
 */
export function buildEnforcerRbac(): readonly [Record<string, unknown>, Record<string, unknown>] {
  return userClusterRole(ENFORCER_USER, [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
    { apiGroups: [''], resources: ['pods', 'namespaces'], verbs: ['list', 'watch'] },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['list', 'watch'] },
  ]);
}

/**
 * The enforcer's arguments on node `nodeName`. Changes apply as they are watched; the periodic full
 * resync only repairs rules someone else removed.
 *
 * @example
 * ```ts
 * enforcerArgs({ kubeconfig: '/d/np.kubeconfig', nodeName: 'real-node-0', serviceCidr: '10.96.0.0/24' });
 * // ['--kubeconfig=/d/np.kubeconfig', '--hostname-override=real-node-0', '--service-cluster-ip-range=10.96.0.0/24', …]
 * ```
 */
export function enforcerArgs(input: {
  readonly kubeconfig: string;
  readonly nodeName: string;
  readonly serviceCidr: string;
}): string[] {
  return [
    `--kubeconfig=${input.kubeconfig}`,
    `--hostname-override=${input.nodeName}`,
    `--service-cluster-ip-range=${input.serviceCidr}`,
    '--iptables-sync-period=1m',
  ];
}
