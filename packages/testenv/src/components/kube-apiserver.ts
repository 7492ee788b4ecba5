/** kube-apiserver flags for a test control plane: RBAC on, client-certificate auth, loopback only. */
import { LOOPBACK } from '../free-port.js';

/** Service ClusterIPs come from here; nothing routes to it (there is no kube-proxy), it only has to be valid. */
export const SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/24';
/** The first address of the range, which the `kubernetes` Service gets and the serving certificate must name. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

export interface ApiServerConfig {
  readonly port: number;
  readonly etcdUrl: string;
  readonly certDir: string;
  readonly servingCertFile: string;
  readonly servingKeyFile: string;
  readonly clientCaFile: string;
  readonly serviceAccountPublicKeyFile: string;
  readonly serviceAccountPrivateKeyFile: string;
  readonly extraArgs?: readonly string[];
}

const flagName = (arg: string) => arg.split('=')[0];

/**
 * The flags, with `extraArgs` last. A flag given in `extraArgs` replaces testenv's own: some
 * (`--authorization-mode`) are lists that would otherwise grow, and the API server refuses a
 * mode named twice.
 */
export function buildApiServerArgs(config: ApiServerConfig): string[] {
  const overridden = new Set((config.extraArgs ?? []).map(flagName));
  const defaults = [
    `--etcd-servers=${config.etcdUrl}`,
    `--bind-address=${LOOPBACK}`,
    `--advertise-address=${LOOPBACK}`,
    `--secure-port=${config.port}`,
    `--cert-dir=${config.certDir}`,
    `--tls-cert-file=${config.servingCertFile}`,
    `--tls-private-key-file=${config.servingKeyFile}`,
    `--client-ca-file=${config.clientCaFile}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${config.serviceAccountPublicKeyFile}`,
    `--service-account-signing-key-file=${config.serviceAccountPrivateKeyFile}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    '--allow-privileged=true',
    // Endpoints may not hold loopback addresses, so the default reconciler would fail forever publishing 127.0.0.1.
    '--endpoint-reconciler-type=none',
    // That plugin taints every new Node not-ready until the node-lifecycle controller clears it; that controller
    // would in turn need kubelet heartbeats, which simulated nodes do not send, so new nodes would never take Pods.
    '--disable-admission-plugins=TaintNodesByCondition',
    '--profiling=false',
  ];
  return [...defaults.filter((arg) => !overridden.has(flagName(arg))), ...(config.extraArgs ?? [])];
}
