/**
 * The ConfigMap the agent reads through the API: user parameters as `postgresql.conf` lines and
 * `pg_hba.conf`. Settings the agent owns (listen address, replication, and
 * synchronous_standby_names, which it publishes in the Lease before setting) are not here. Pure.
 */
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { names, REPLICATION_USER } from '../../contract.js';
import { clusterLabels } from './labels.js';

/** Quotes a value as postgresql.conf expects: numbers and booleans bare, everything else quoted. */
export function confValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `'${String(value).replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

export function postgresConfig(cluster: PostgresCluster): ConfigMap {
  const c = cluster.metadata?.name ?? '';
  const parameters: Record<string, unknown> = {
    // Replicas need room for their slots and senders even with the defaults users rarely change.
    max_wal_senders: 10,
    max_replication_slots: 10,
    wal_keep_size: '512MB',
    password_encryption: 'scram-sha-256',
    ...(cluster.spec.config?.parameters ?? {}),
  };
  const conf = Object.keys(parameters)
    .sort()
    .map((k) => `${k} = ${confValue(parameters[k])}`)
    .join('\n');
  const hba = [
    '# Managed by Kanri: edits are overwritten.',
    'local all postgres peer',
    'local all all scram-sha-256',
    `host replication ${REPLICATION_USER} all scram-sha-256`,
    'host all all all scram-sha-256',
  ].join('\n');
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: names.config(c), namespace: cluster.metadata?.namespace, labels: clusterLabels(c) },
    data: { 'postgresql.conf': `${conf}\n`, 'pg_hba.conf': `${hba}\n` },
  };
}
