import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { planRestore, type RestorePod } from './restore-plan.js';

const now = new Date('2026-12-01T10:00:00Z');
const cluster = (restoreStatus?: Record<string, unknown>, enabled = true): PostgresCluster =>
  ({
    metadata: { name: 'db', namespace: 'default', annotations: { 'postgres.kanri.dev/pgbackrest-restore': 'r1' } },
    spec: {
      postgresVersion: 15,
      instances: [],
      backups: {
        pgbackrest: {
          repos: [{ name: 'repo1', s3: { bucket: 'b', endpoint: 'e', region: 'r' } }],
          restore: { enabled, repoName: 'repo1', options: ['--type=time', '--target=2026-12-01 09:00:00+00'] },
        },
      },
    },
    status: { primary: 'db-i-1', ...(restoreStatus ? { pgbackrest: { restore: restoreStatus } } : {}) },
  }) as unknown as PostgresCluster;
const pod = (name: string, extra: Partial<RestorePod> = {}): RestorePod => ({
  name,
  deleting: false,
  restoreId: undefined,
  report: undefined,
  ...extra,
});

describe('planRestore', () => {
  it('fences every instance first, keeping the primary to restore', () => {
    const plan = planRestore({
      cluster: cluster(),
      pods: [pod('db-i-0'), pod('db-i-1')],
      instances: ['db-i-0', 'db-i-1'],
      now,
    });
    assert.equal(plan.active, true);
    assert.deepEqual(plan.deletePods, ['db-i-0', 'db-i-1']);
    assert.equal(plan.status?.phase, 'Fencing');
    assert.equal(plan.status?.instance, 'db-i-1');
    assert.equal(plan.clearOthers, false);
    assert.equal(plan.event?.reason, 'RestoreStarted');
  });

  it('clears the Lease and other volumes only once every Pod is gone, then creates the restoring one', () => {
    const fencing = { id: 'r1', finished: false, phase: 'Fencing', instance: 'db-i-1', startTime: now.toISOString() };
    const stillGoing = planRestore({
      cluster: cluster(fencing),
      pods: [pod('db-i-0', { deleting: true })],
      instances: ['db-i-0', 'db-i-1'],
      now,
    });
    assert.equal(stillGoing.clearOthers, false);
    assert.deepEqual(stillGoing.deletePods, []);
    const gone = planRestore({ cluster: cluster(fencing), pods: [], instances: ['db-i-0', 'db-i-1'], now });
    assert.equal(gone.clearOthers, true);
    assert.equal(gone.createPod?.instance, 'db-i-1');
    assert.deepEqual(gone.createPod?.source.options, ['--type=time', '--target=2026-12-01 09:00:00+00']);
    assert.equal(gone.createPod?.source.id, 'r1');
  });

  it("reports the restoring instance's result; a failure keeps the cluster down", () => {
    const restoring = { id: 'r1', finished: false, phase: 'Restoring', instance: 'db-i-1' };
    const ok = planRestore({
      cluster: cluster(restoring),
      pods: [pod('db-i-1', { restoreId: 'r1', report: { id: 'r1', result: 'succeeded' } })],
      instances: ['db-i-0', 'db-i-1'],
      now,
    });
    assert.equal(ok.active, false);
    assert.equal(ok.status?.phase, 'Succeeded');
    assert.equal(ok.status?.succeeded, 1);
    const failed = planRestore({
      cluster: cluster(restoring),
      pods: [
        pod('db-i-1', {
          restoreId: 'r1',
          report: {
            id: 'r1',
            result: 'failed',
            reason: 'recovery ended before configured recovery target was reached',
          },
        }),
      ],
      instances: ['db-i-0', 'db-i-1'],
      now,
    });
    assert.equal(failed.active, true);
    assert.equal(failed.status?.phase, 'Failed');
    assert.match(failed.status?.message ?? '', /recovery ended/);
    // Finished: the same value does nothing more.
    const again = planRestore({ cluster: cluster(failed.status as never), pods: [], instances: ['db-i-0'], now });
    assert.equal(again.createPod, undefined);
    assert.equal(again.active, true);
  });

  it('refuses while restore.enabled is not true', () => {
    const plan = planRestore({ cluster: cluster(undefined, false), pods: [pod('db-i-0')], instances: ['db-i-0'], now });
    assert.equal(plan.status?.phase, 'Failed');
    assert.equal(plan.status?.reason, 'RestoreDisabled');
    assert.deepEqual(plan.deletePods, []);
  });
});
