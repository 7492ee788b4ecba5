import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresClusterSpec } from '../api/postgres-cluster.js';
import { type ObservedInstance, planInstances } from './instance-plan.js';

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
const spec = (replicas: number): PostgresClusterSpec =>
  ({ postgresVersion: 15, instances: [{ replicas, dataVolumeClaimSpec: volume }] }) as PostgresClusterSpec;
const member = (n: number, extra: Partial<ObservedInstance> = {}): ObservedInstance => ({
  name: `db-instance1-${n}`,
  set: 'instance1',
  hasPod: true,
  hasVolume: true,
  isPrimary: false,
  ready: true,
  deleting: false,
  ...extra,
});

describe('planInstances', () => {
  it('creates a new cluster with exactly one initdb instance', () => {
    const plan = planInstances('db', spec(3), [], false);
    assert.deepEqual(
      plan.keep.map((k) => k.name),
      ['db-instance1-0', 'db-instance1-1', 'db-instance1-2'],
    );
    assert.equal(plan.create.length, 3);
    assert.equal(plan.initdb, 'db-instance1-0');
  });

  it('never initialises again once the cluster has been initialised', () => {
    assert.equal(planInstances('db', spec(1), [], true).initdb, undefined);
    assert.equal(planInstances('db', spec(2), [member(0, { hasPod: false }), member(1)], true).initdb, undefined);
    // Restarted before any primary reported: the first instance is chosen again, and only it.
    assert.equal(
      planInstances('db', spec(2), [member(0, { hasPod: false }), member(1)], false).initdb,
      'db-instance1-0',
    );
  });

  it('scales down removing replicas only, never the primary, least useful first', () => {
    const observed = [member(0), member(1), member(2, { ready: false }), member(3), member(4, { isPrimary: true })];
    const plan = planInstances('db', spec(2), observed, true);
    assert.deepEqual(plan.remove.map((r) => r.name).sort(), ['db-instance1-1', 'db-instance1-2', 'db-instance1-3']);
    assert.deepEqual(plan.keep.map((k) => k.name).sort(), ['db-instance1-0', 'db-instance1-4']);
    assert.equal(plan.initdb, undefined);
  });

  it('keeps numbering stable: scaling up fills gaps and never renames', () => {
    const plan = planInstances('db', spec(3), [member(0), member(2, { isPrimary: true })], true);
    assert.deepEqual(plan.keep.map((k) => k.name).sort(), ['db-instance1-0', 'db-instance1-1', 'db-instance1-2']);
    assert.deepEqual(
      plan.create.map((c) => c.name),
      ['db-instance1-1'],
    );
  });

  it('recreates the Pod of an instance whose volume remains (keeps, does not create a volume)', () => {
    const plan = planInstances('db', spec(2), [member(0, { isPrimary: true }), member(1, { hasPod: false })], true);
    assert.equal(plan.keep.length, 2);
    assert.equal(plan.create.length, 0);
  });

  it('removes replicas of instance sets no longer declared', () => {
    const plan = planInstances(
      'db',
      spec(1),
      [member(0, { isPrimary: true }), { ...member(0), name: 'db-old-0', set: 'old' }],
      true,
    );
    assert.deepEqual(
      plan.remove.map((r) => r.name),
      ['db-old-0'],
    );
  });
});
