import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planVolumeCheck, type VolumeCheckInput } from './volume-check-plan.js';

const base: VolumeCheckInput = {
  own: { systemIdentifier: '7001', timeline: 2 },
  recorded: '7001',
  leaderTimeline: 2,
  leaseExists: true,
  mode: 'basebackup',
};

describe('planVolumeCheck', () => {
  it('uses data of this cluster, stating identifier and timeline', () => {
    const check = planVolumeCheck(base);
    assert.equal(check.action, 'use');
    assert.match(
      check.message,
      /system identifier 7001 is the cluster's \(from its status\); timeline 2 \(the leader's: 2\)/,
    );
  });
  it('re-clones another cluster’s data (a different system identifier)', () => {
    const check = planVolumeCheck({ ...base, recorded: '9009' });
    assert.equal(check.action, 'reclone');
    assert.match(check.message, /system identifier 7001 is not the cluster's \(9009, from its status\)/);
  });
  it('compares with the primary’s report when the status has no identifier yet', () => {
    const input = { ...base, recorded: undefined, holder: { name: 'db-i-0', systemIdentifier: '9009' } };
    assert.equal(planVolumeCheck(input).action, 'reclone');
    assert.match(planVolumeCheck(input).message, /from the primary db-i-0/);
  });
  it('prefers the recorded identifier to a report', () =>
    assert.equal(planVolumeCheck({ ...base, holder: { name: 'db-i-0', systemIdentifier: '9009' } }).action, 'use'));
  it('states a timeline behind the leader’s: it follows (rewinding if needed), never leads', () => {
    const check = planVolumeCheck({ ...base, leaderTimeline: 4 });
    assert.equal(check.action, 'use');
    assert.match(check.message, /timeline 2, behind the leader's 4: it follows \(pg_rewind if its history diverged\)/);
  });
  it('waits while a primary leads but the cluster’s identifier is not known yet', () => {
    assert.equal(
      planVolumeCheck({ ...base, recorded: undefined, holder: { name: 'db-i-0', systemIdentifier: undefined } }).action,
      'wait',
    );
    // A new cluster whose first instance has not created the Lease yet.
    assert.equal(planVolumeCheck({ ...base, recorded: undefined, leaseExists: false }).action, 'wait');
  });
  it('does not wait for the report of a holder whose hold expired (it may be gone)', () =>
    assert.equal(
      planVolumeCheck({
        ...base,
        recorded: undefined,
        holder: { name: 'db-i-0', systemIdentifier: undefined, expired: true },
      }).action,
      'use',
    ));
  it('uses the data of a new cluster’s first instance (nothing else exists)', () =>
    assert.equal(planVolumeCheck({ ...base, recorded: undefined, leaseExists: false, mode: 'initdb' }).action, 'use'));
  it('does not wait forever when nothing is recorded and nobody leads', () =>
    assert.equal(planVolumeCheck({ ...base, recorded: undefined }).action, 'use'));
  it('leaves a restore to replace the data', () =>
    assert.equal(planVolumeCheck({ ...base, recorded: '9009', mode: 'restore' }).action, 'use'));
});
