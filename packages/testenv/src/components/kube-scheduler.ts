/** kube-scheduler flags: default profile, no leader election, loopback only. */
import { LOOPBACK } from '../free-port.js';

export interface SchedulerConfig {
  readonly port: number;
  readonly kubeconfigFile: string;
  readonly certDir: string;
}

export function buildSchedulerArgs(config: SchedulerConfig): string[] {
  return [
    `--kubeconfig=${config.kubeconfigFile}`,
    `--authentication-kubeconfig=${config.kubeconfigFile}`,
    `--authorization-kubeconfig=${config.kubeconfigFile}`,
    `--bind-address=${LOOPBACK}`,
    `--secure-port=${config.port}`,
    `--cert-dir=${config.certDir}`,
    '--leader-elect=false',
  ];
}
