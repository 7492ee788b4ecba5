/** kwok: simulated nodes that report Ready and move scheduled Pods to Running/Ready, with no kubelet or containers. */
import { LOOPBACK } from '../free-port.js';

/** kwok manages only nodes carrying this annotation, so real or process nodes added later are left alone. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

/** Addresses kwok hands to simulated Pods. */
export const POD_CIDR = '10.244.0.0/16';

export interface KwokConfig {
  readonly kubeconfigFile: string;
  readonly configFile: string;
  readonly serverPort: number;
}

/**
 * kwok's configuration: its options document followed by the lifecycle stages built beside the
 * binary. Every option is spelled out because kwok v0.8.0 does not apply its own defaults to a
 * configuration read from a file (it exits with "playStageParallelism must be greater than 0").
 */
export function buildKwokConfiguration(stages: string): string {
  const options = [
    // Pods get addresses so EndpointSlices fill in; nothing routes to them (no containers run).
    `cidr: ${POD_CIDR}`,
    // Anything that dials a node (kubectl logs through the API server) stays on loopback.
    'nodeIP: 127.0.0.1',
    'podPlayStageParallelism: 4',
    'nodePlayStageParallelism: 4',
    'nodeLeaseParallelism: 4',
    'podsOnNodeSyncParallelism: 1',
  ];
  return `apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n${options.map((o) => `  ${o}`).join('\n')}\n---\n${stages}\n`;
}

export function buildKwokArgs(config: KwokConfig): string[] {
  return [
    `--kubeconfig=${config.kubeconfigFile}`,
    // Without --config kwok reads ~/.kwok/kwok.yaml, which would make tests depend on the user's home.
    `--config=${config.configFile}`,
    `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
    `--server-address=${LOOPBACK}:${config.serverPort}`,
  ];
}

/** A fake Node object kwok will manage. */
export function buildKwokNode(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node-role.kubernetes.io/agent': '',
        type: 'kwok',
      },
    },
    status: {
      allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
      capacity: { cpu: '32', memory: '256Gi', pods: '110' },
      nodeInfo: { architecture: 'amd64', operatingSystem: 'linux', kubeletVersion: 'fake', kubeProxyVersion: 'fake' },
    },
  };
}
