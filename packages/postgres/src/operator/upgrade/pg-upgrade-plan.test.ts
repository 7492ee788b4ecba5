import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MajorUpgradeStatus } from '../../api/major-upgrade-status.js';
import { type PgUpgradeInput, planPgUpgrade } from './pg-upgrade-plan.js';

const spec = { postgresClusterName: 'hippo', fromPostgresVersion: 15, toPostgresVersion: 16 };
const cluster = (over: Partial<NonNullable<PgUpgradeInput['cluster']>> = {}) => ({
  allowedUpgrade: 'up',
  shutdown: false,
  running: 15,
  majorUpgrade: undefined,
  ...over,
});
const plan = (c: PgUpgradeInput['cluster'], extra: Partial<PgUpgradeInput['spec']> = {}) =>
  planPgUpgrade({ name: 'up', spec: { ...spec, ...extra }, cluster: c });
const reasons = (p: ReturnType<typeof planPgUpgrade>) => p.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('planPgUpgrade', () => {
  it('waits, with PGO’s reasons, for the cluster, its annotation, the version it upgrades from, and a running cluster', () => {
    assert.deepEqual(reasons(plan(undefined)), ['Progressing=False/PGClusterNotFound']);
    const missing = plan(cluster({ allowedUpgrade: 'other' }));
    assert.deepEqual(reasons(missing), ['Progressing=False/PGClusterMissingRequiredAnnotation']);
    assert.equal(missing.conditions[0]?.message, 'PostgresCluster hippo lacks annotation for upgrade up');
    assert.deepEqual(reasons(plan(cluster({ running: 14 }))), ['Progressing=False/PGUpgradeInvalidForCluster']);
    assert.deepEqual(reasons(plan(cluster({ shutdown: true }))), ['Progressing=False/PGClusterShutdown']);
    for (const p of [plan(undefined), plan(cluster({ running: 14 })), plan(cluster({ shutdown: true }))])
      assert.equal(p.request, undefined);
  });
  it('asks the cluster for the upgrade (with the image, if named), then mirrors its status', () => {
    assert.deepEqual(plan(cluster(), { toPostgresImage: 'example/pg:16' }).request, {
      postgresVersion: 16,
      image: 'example/pg:16',
    });
    const status = (phase: MajorUpgradeStatus['phase']): MajorUpgradeStatus => ({
      from: 15,
      to: 16,
      phase,
      message: 'm',
    });
    const upgrading = plan(cluster({ majorUpgrade: status('Upgrading') }));
    assert.deepEqual([reasons(upgrading), upgrading.request], [['Progressing=True/PGUpgradeProgressing'], undefined]);
    const done = plan(cluster({ majorUpgrade: status('Succeeded'), running: 16 }));
    assert.deepEqual(reasons(done), ['Progressing=False/PGUpgradeCompleted', 'Succeeded=True/PGUpgradeSucceeded']);
    assert.equal(done.finished, true);
    assert.deepEqual(reasons(plan(cluster({ majorUpgrade: status('Failed') }))), [
      'Progressing=False/PGUpgradeFailed',
      'Succeeded=False/PGUpgradeFailed',
    ]);
    // A version set back after a failure is the user's call: the PGUpgrade does not ask again.
    const back = plan(cluster({ majorUpgrade: status('RolledBack') }));
    assert.deepEqual([back.request, back.finished], [undefined, true]);
  });
});
