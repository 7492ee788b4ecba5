/**
 * The ConfigMap the agent reads through the API: user parameters as `postgresql.conf` lines and
 * `pg_hba.conf`. Settings the agent owns (listen address, replication, and
 * synchronous_standby_names, which it publishes in the Lease before setting) are not here. Pure.
 */

import { createHash } from 'node:crypto';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  CONFIG_HASH_SETTING,
  CONFIG_KEY,
  encodeRestoreSource,
  names,
  quoteConfValue,
  REPLICATION_USER,
  type RestoreSource,
  SUPERUSER,
} from '../../contract/index.js';
import { clusterLabels } from './labels.js';
import { defaultMaxSlotWalKeepSize } from './wal-retention.js';

/** Quotes a value as postgresql.conf expects: numbers and booleans bare, everything else quoted. */
export function confValue(value: unknown): string {
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : quoteConfValue(String(value));
}

/** The hash of the parameters as rendered (CONFIG_HASH_SETTING carries it to postgres). */
export function parametersHash(cluster: PostgresCluster): string {
  return hashOf(parameterLines(cluster));
}

function hashOf(lines: string): string {
  return createHash('sha256').update(lines).digest('hex').slice(0, 16);
}

function parameterLines(cluster: PostgresCluster): string {
  const maxSlotWalKeepSize = defaultMaxSlotWalKeepSize(cluster);
  const parameters: Record<string, unknown> = {
    // Senders and slots are the agent's (AGENT_OWNED_SETTINGS); retained WAL lets a lagging replica catch up.
    wal_keep_size: '512MB',
    // A dead replica's slot must not fill the primary's volume: see wal-retention.ts for the rule.
    ...(maxSlotWalKeepSize ? { max_slot_wal_keep_size: maxSlotWalKeepSize } : {}),
    // A replica retries a failed or ended WAL stream after this long. PostgreSQL's 5 s is spent
    // in full on every failover: the surviving replicas lose their primary, and the promoted one's
    // timeline switch ends their stream once more. With synchronous replication no commit is
    // acknowledged until a standby streams again, so this bounds the RTO.
    wal_retrieve_retry_interval: '1s',
    password_encryption: 'scram-sha-256',
    // With a repo, a quiet primary still closes a segment every minute: the recovery window's
    // end (and what a total loss can lose) is at most this old.
    ...(cluster.spec.backups?.pgbackrest ? { archive_timeout: '60s' } : {}),
    ...(cluster.spec.config?.parameters ?? {}),
  };
  return Object.keys(parameters)
    .sort()
    .map((k) => `${k} = ${confValue(parameters[k])}`)
    .join('\n');
}

export function postgresConfig(cluster: PostgresCluster, restoreSource?: RestoreSource): ConfigMap {
  const c = cluster.metadata?.name ?? '';
  const lines = parameterLines(cluster);
  const conf = `${lines}\n${CONFIG_HASH_SETTING} = ${confValue(hashOf(lines))}`;
  const hba = [
    '# Managed by Kanri: edits are overwritten.',
    'local all postgres peer',
    'local all all scram-sha-256',
    `host replication ${REPLICATION_USER} all scram-sha-256`,
    // No certificate logs the superuser in: the CAs postgres trusts for client certificates may be
    // a shared issuer's (spec.tls.replicationSecret), which can name any role. Its password works
    // from the network only when the spec allows it (PGO's and CloudNativePG's meaning), under the
    // same TLS rule as every user (spec.tls.required); the agents need none of it.
    ...(cluster.spec.enableSuperuserAccess ? [] : [`host all ${SUPERUSER} all reject`]),
    'host all all all scram-sha-256',
  ].join('\n');
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: names.config(c), namespace: cluster.metadata?.namespace, labels: clusterLabels(c) },
    data: {
      [CONFIG_KEY.parameters]: `${conf}\n`,
      [CONFIG_KEY.hba]: `${hba}\n`,
      ...(restoreSource ? { [CONFIG_KEY.restoreSource]: encodeRestoreSource(restoreSource) } : {}),
    },
  };
}
