import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { CONFIG_KEY } from '../../contract/index.js';
import { postgresConfig } from './postgres-config.js';
import { defaultMaxSlotWalKeepSize } from './wal-retention.js';

const set = (storage: string) => ({
  replicas: 1,
  dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } } },
});
const cluster = (storages: string[], parameters?: Record<string, unknown>) =>
  ({
    metadata: { name: 'db', namespace: 'default' },
    spec: { postgresVersion: 15, instances: storages.map(set), ...(parameters ? { config: { parameters } } : {}) },
  }) as unknown as PostgresCluster;

describe('defaultMaxSlotWalKeepSize', () => {
  it('is a quarter of the data volume, in whole MB', () => {
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['20Gi'])), '5120MB');
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['1Gi'])), '256MB');
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['10G'])), `${Math.floor(10e9 / 4 / 2 ** 20)}MB`);
  });
  it('reads every form of quantity Kubernetes reads (the API admits them)', () => {
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['1e10'])), defaultMaxSlotWalKeepSize(cluster(['10G'])));
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['.5Ti'])), '131072MB');
  });
  it('follows the smallest instance set: any instance may become the primary', () => {
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['100Gi', '2Gi', '50Gi'])), '512MB');
  });
  it('keeps at least one WAL segment', () => {
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['20Mi'])), '16MB');
  });
  it('is left to postgres when no size can be read', () => {
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['a lot'])), undefined);
    assert.equal(defaultMaxSlotWalKeepSize(cluster(['0'])), undefined);
  });
});

describe('postgresConfig: max_slot_wal_keep_size', () => {
  const parameters = (c: PostgresCluster) => postgresConfig(c).data?.[CONFIG_KEY.parameters] ?? '';
  it('renders the derived default', () => {
    assert.match(parameters(cluster(['1Gi'])), /^max_slot_wal_keep_size = '256MB'$/m);
  });
  it('lets spec.config.parameters override it, -1 included', () => {
    const text = parameters(cluster(['1Gi'], { max_slot_wal_keep_size: -1 }));
    assert.match(text, /^max_slot_wal_keep_size = -1$/m);
    assert.equal(text.match(/max_slot_wal_keep_size/g)?.length, 1);
  });
});
