/** kube-controller-manager flags: the controllers operator tests rely on, no leader election, loopback only. */
import { LOOPBACK } from '../free-port.js';

/**
 * The controllers started. Workload controllers (StatefulSet, ReplicaSet, Deployment, Job, CronJob),
 * garbage collection and EndpointSlices are what operators depend on; the namespace and
 * service-account controllers are needed for Pods to be admitted at all (the ServiceAccount
 * admission plugin rejects Pods until the `default` ServiceAccount exists).
 */
export const CONTROLLERS = [
  'garbage-collector-controller',
  'clusterrole-aggregation-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'statefulset-controller',
  'replicaset-controller',
  'deployment-controller',
  'job-controller',
  'cronjob-controller',
  'ttl-after-finished-controller',
  'endpointslice-controller',
  'endpointslice-mirroring-controller',
  'disruption-controller',
  'pod-garbage-collector-controller',
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  'persistentvolumeclaim-protection-controller',
] as const;

/** What a real cluster does about a node that stops reporting: with `nodeLifecycle` only. */
export const NODE_LIFECYCLE_CONTROLLERS = ['node-lifecycle-controller', 'taint-eviction-controller'] as const;

export interface ControllerManagerConfig {
  readonly port: number;
  readonly kubeconfigFile: string;
  readonly certDir: string;
  readonly serviceAccountPrivateKeyFile: string;
  readonly rootCaFile: string;
  /**
   * Also run the node-lifecycle controller, with Kubernetes' default periods (a Node whose kubelet
   * stops posting status is NotReady after 50 s, its Pods then not Ready, the Node tainted), and
   * the taint-eviction controller that evicts its Pods once their toleration (300 s by default)
   * ends. Off by default: kwok and process nodes would be marked NotReady by it.
   */
  readonly nodeLifecycle?: boolean;
}

export function buildControllerManagerArgs(config: ControllerManagerConfig): string[] {
  return [
    `--kubeconfig=${config.kubeconfigFile}`,
    `--authentication-kubeconfig=${config.kubeconfigFile}`,
    `--authorization-kubeconfig=${config.kubeconfigFile}`,
    `--bind-address=${LOOPBACK}`,
    `--secure-port=${config.port}`,
    `--cert-dir=${config.certDir}`,
    '--leader-elect=false',
    `--controllers=${[...CONTROLLERS, ...(config.nodeLifecycle ? NODE_LIFECYCLE_CONTROLLERS : [])].join(',')}`,
    `--service-account-private-key-file=${config.serviceAccountPrivateKeyFile}`,
    `--root-ca-file=${config.rootCaFile}`,
  ];
}
