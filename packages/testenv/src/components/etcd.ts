/** etcd for one control plane: single member, loopback only, fsync off (test data is disposable). */
import { LOOPBACK } from '../free-port.js';

export interface EtcdConfig {
  readonly dataDir: string;
  readonly clientPort: number;
  readonly peerPort: number;
}

export function etcdUrl(config: Pick<EtcdConfig, 'clientPort'>): string {
  return `http://${LOOPBACK}:${config.clientPort}`;
}

export function buildEtcdArgs(config: EtcdConfig): string[] {
  const client = etcdUrl(config);
  const peer = `http://${LOOPBACK}:${config.peerPort}`;
  return [
    '--name=default',
    `--data-dir=${config.dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=default=${peer}`,
    // envtest does the same: durability is pointless for a throwaway store and fsync dominates latency.
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}
