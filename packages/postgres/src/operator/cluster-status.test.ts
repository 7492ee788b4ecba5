import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { ANNOTATION, type InstanceReport, LABEL } from '../contract/index.js';
import { clusterStatus } from './cluster-status.js';

const now = new Date('2026-11-29T12:00:00Z');
const cluster = { metadata: { name: 'db', generation: 3 }, spec: {} } as unknown as PostgresCluster;
const pod = (name: string, role: string, report: Partial<InstanceReport>, ready = true): Pod => ({
  metadata: {
    name,
    labels: { [LABEL.role]: role },
    annotations: {
      [ANNOTATION.status]: JSON.stringify({
        role,
        ready: true,
        timeline: 1,
        systemIdentifier: '742',
        receivedLsn: '0/3000000',
        replayedLsn: '0/3000000',
        lagBytes: 0,
        updatedAt: now.toISOString(),
        ...report,
      }),
    },
  },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});

describe('clusterStatus', () => {
  it('is Ready with the primary named when every desired instance is ready', () => {
    const status = clusterStatus({
      cluster,
      pods: [pod('db-i-0', 'primary', {}), pod('db-i-1', 'replica', { lagBytes: 12 })],
      desired: 2,
      converging: false,
      now,
    });
    assert.equal(status.primary, 'db-i-0');
    assert.equal(status.readyInstances, 2);
    assert.equal(status.systemIdentifier, '742');
    assert.equal(status.observedGeneration, 3);
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status]),
      [
        ['Ready', 'True'],
        ['Progressing', 'False'],
        ['Degraded', 'False'],
      ],
    );
    assert.deepEqual(status.instances?.[1], {
      name: 'db-i-1',
      role: 'replica',
      ready: true,
      timeline: 1,
      lagBytes: 12,
    });
  });

  it('does not trust a stale report, and says why there is no primary', () => {
    const stale = new Date(now.getTime() - 60_000).toISOString();
    const status = clusterStatus({
      cluster,
      pods: [
        pod('db-i-0', 'primary', { updatedAt: stale }),
        pod('db-i-1', 'replica', { ready: false, message: 'waiting: no replica within lag limit' }),
      ],
      desired: 2,
      converging: false,
      now,
    });
    assert.equal(status.primary, undefined);
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'NoPrimary');
    assert.match(ready?.message ?? '', /db-i-1: waiting: no replica within lag limit/);
    assert.equal(status.conditions?.find((c) => c.type === 'Degraded')?.status, 'True');
  });
});
