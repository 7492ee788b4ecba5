import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MajorUpgradeStatus } from '../../api/major-upgrade-status.js';
import type { InstanceReport } from '../../contract/index.js';
import {
  type MajorUpgradeInput,
  planMajorUpgrade,
  type UpgradePod,
  upgradeHoldsRollout,
} from './major-upgrade-plan.js';

const now = new Date('2026-12-02T06:00:00Z');
const report = (over: Partial<InstanceReport>): InstanceReport => ({
  role: 'primary',
  ready: true,
  timeline: 1,
  systemIdentifier: '111',
  receivedLsn: '0/1',
  replayedLsn: '0/1',
  lagBytes: 0,
  updatedAt: now.toISOString(),
  serverVersion: '15.18',
  ...over,
});
const pod = (name: string, over: Partial<UpgradePod> = {}): UpgradePod => ({
  name,
  deleting: false,
  upgradeFrom: undefined,
  report: report({}),
  ...over,
});
const input = (over: Partial<MajorUpgradeInput>): MajorUpgradeInput => ({
  wanted: 16,
  allowed: '16',
  force: false,
  running: 15,
  previous: undefined,
  primary: 'db-i-0',
  instances: ['db-i-0', 'db-i-1'],
  pods: [pod('db-i-0'), pod('db-i-1', { report: report({ role: 'replica' }) })],
  claims: [],
  backup: { required: false, recentFull: false },
  now,
  ...over,
});
const checked = (ok: boolean, message = 'passed') => [
  pod('db-i-0', { report: report({ upgradeCheck: { to: 16, ok, message, at: now.toISOString() } }) }),
  pod('db-i-1', { report: report({ role: 'replica' }) }),
];
const started = '2026-12-02T05:59:00Z';
const upgrading: MajorUpgradeStatus = {
  from: 15,
  to: 16,
  phase: 'Upgrading',
  message: '',
  instance: 'db-i-0',
  startedAt: started,
};

describe('planMajorUpgrade, before the downtime', () => {
  it('does nothing without the annotation naming the new major, and keeps the old image', () => {
    for (const allowed of [undefined, '17']) {
      const plan = planMajorUpgrade(input({ allowed }));
      assert.deepEqual([plan.active, plan.imageMajor, plan.status, plan.deletePods], [false, 15, undefined, []]);
    }
  });
  it('waits for the primary’s pre-flight check, then stops on a failed one, touching nothing', () => {
    const waiting = planMajorUpgrade(input({}));
    assert.deepEqual([waiting.status?.phase, waiting.active, waiting.imageMajor], ['Checking', false, 15]);
    const failed = planMajorUpgrade(
      input({ pods: checked(false, 'Checking for reg* data types in user tables fatal') }),
    );
    assert.equal(failed.status?.phase, 'CheckFailed');
    assert.match(failed.status?.message ?? '', /nothing was stopped: Checking for reg\*/);
    assert.deepEqual([failed.deletePods, failed.active, failed.event?.reason], [[], false, 'MajorUpgradeCheckFailed']);
  });
  it('holds for a recent full backup when backups are configured, unless forced', () => {
    const gated = planMajorUpgrade(input({ pods: checked(true), backup: { required: true, recentFull: false } }));
    assert.deepEqual([gated.status?.phase, gated.deletePods], ['WaitingForBackup', []]);
    const forced = planMajorUpgrade(
      input({ pods: checked(true), force: true, backup: { required: true, recentFull: false } }),
    );
    assert.equal(forced.status?.phase, 'Stopping');
    const backedUp = planMajorUpgrade(input({ pods: checked(true), backup: { required: true, recentFull: true } }));
    assert.equal(backedUp.status?.phase, 'Stopping');
    const unconfirmed = planMajorUpgrade(
      input({ pods: checked(true), backup: { required: true, recentFull: false, why: 'pgBackRest lists no X' } }),
    );
    assert.match(unconfirmed.status?.message ?? '', /^backups are configured and pgBackRest lists no X: take one/);
  });
  it('then stops every instance, recording when the downtime began and whose data is upgraded', () => {
    const plan = planMajorUpgrade(input({ pods: checked(true) }));
    assert.deepEqual(
      [
        plan.status?.phase,
        plan.status?.instance,
        plan.status?.startedAt,
        plan.active,
        plan.deletePods,
        plan.event?.reason,
      ],
      ['Stopping', 'db-i-0', now.toISOString(), true, ['db-i-1'], 'MajorUpgradeStarted'],
    );
    assert.ok(upgradeHoldsRollout('Checking') && upgradeHoldsRollout('Stopping') && !upgradeHoldsRollout('Recloning'));
  });
});

describe('planMajorUpgrade, the downtime', () => {
  const stopping = { ...upgrading, phase: 'Stopping' as const };
  it('stops the replicas before the primary, then removes the Lease and creates the upgrading Pod once every Pod is gone', () => {
    const still = planMajorUpgrade(
      input({ previous: stopping, pods: [pod('db-i-0'), pod('db-i-1', { deleting: true })] }),
    );
    assert.deepEqual(
      [still.status?.phase, still.deletePods, still.deleteLease, still.createUpgradePod],
      ['Stopping', [], false, undefined],
      'the primary stops only after the replicas',
    );
    const last = planMajorUpgrade(input({ previous: stopping, pods: [pod('db-i-0')] }));
    assert.deepEqual(last.deletePods, ['db-i-0']);
    const gone = planMajorUpgrade(input({ previous: stopping, pods: [] }));
    assert.deepEqual(
      [gone.status?.phase, gone.deleteLease, gone.createUpgradePod, gone.imageMajor, gone.active],
      ['Upgrading', true, { instance: 'db-i-0', from: 15 }, 16, true],
    );
  });
  it('reports a failed upgrade, and a version set back runs the old data again', () => {
    const failedPod = pod('db-i-0', {
      upgradeFrom: 15,
      report: report({
        ready: false,
        upgrade: { from: 15, to: 16, result: 'failed', message: 'this image lacks pg_rewind' },
      }),
    });
    const earlier = pod('db-i-0', {
      upgradeFrom: 15,
      report: report({ ready: false, upgrade: { from: 14, to: 15, result: 'succeeded', message: '' } }),
    });
    // The volume's earlier upgrade (14 → 15) is not this one: setting the version back still rolls back.
    assert.equal(
      planMajorUpgrade(input({ previous: upgrading, wanted: 15, pods: [earlier] })).status?.phase,
      'RolledBack',
    );
    const failed = planMajorUpgrade(input({ previous: upgrading, pods: [failedPod] }));
    assert.equal(failed.status?.phase, 'Failed');
    assert.match(
      failed.status?.message ?? '',
      /lacks pg_rewind\. The old data is intact: set spec.postgresVersion back to 15/,
    );
    assert.equal(failed.active, true);
    const back = planMajorUpgrade(input({ previous: failed.status, wanted: 15, pods: [failedPod] }));
    assert.deepEqual(
      [back.status?.phase, back.deletePods, back.active, back.imageMajor],
      ['RolledBack', ['db-i-0'], false, 15],
    );
  });
  it('moves on once the upgraded primary serves the new major: downtime, new identity, replicas re-clone', () => {
    const serving = pod('db-i-0', {
      upgradeFrom: 15,
      report: report({
        serverVersion: '16.15',
        systemIdentifier: '222',
        upgrade: { from: 15, to: 16, result: 'succeeded', message: '', pgUpgradeMs: 2400 },
      }),
    });
    const plan = planMajorUpgrade(input({ previous: upgrading, pods: [serving] }));
    assert.deepEqual(
      [plan.status?.phase, plan.status?.downtimeSeconds, plan.status?.pgUpgradeSeconds, plan.systemIdentifier],
      ['Recloning', 60, 2.4, '222'],
    );
    const old = { instance: 'db-i-1', createdAt: '2026-12-01T00:00:00Z', deleting: false };
    const recloning = planMajorUpgrade(
      input({ previous: plan.status, pods: [serving], claims: [{ ...old, instance: 'db-i-0' }, old] }),
    );
    assert.deepEqual([recloning.deleteClaims, recloning.active], [['db-i-1'], true]);
    const fresh = { instance: 'db-i-1', createdAt: now.toISOString(), deleting: false };
    const replica = pod('db-i-1', { report: report({ role: 'replica', serverVersion: '16.15' }) });
    const done = planMajorUpgrade(
      input({
        previous: plan.status,
        pods: [serving, replica],
        claims: [fresh],
        backup: { required: true, recentFull: true },
      }),
    );
    assert.deepEqual([done.status?.phase, done.requestBackup, done.active], ['Succeeded', true, false]);
  });
});
