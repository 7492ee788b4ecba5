import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AdoptionInput, planAdoption } from './adoption-plan.js';

const primaryKept: AdoptionInput = {
  postgresRunning: true,
  inRecovery: false,
  watchdog: 'armed',
  leaseHolder: 'db-0',
  self: 'db-0',
  restorePending: false,
};

describe('adopting the postgres a keeper kept running', () => {
  it('boots as usual when nothing runs', () => {
    assert.deepEqual(planAdoption({ ...primaryKept, postgresRunning: false, inRecovery: undefined }), {
      action: 'boot',
    });
  });

  it('leads with a primary whose Lease names this Pod', () => {
    assert.deepEqual(planAdoption(primaryKept), { action: 'lead' });
  });

  it('follows with a standby, whoever holds the Lease', () => {
    for (const leaseHolder of ['db-0', 'db-1', undefined])
      assert.deepEqual(planAdoption({ ...primaryKept, inRecovery: true, watchdog: 'idle', leaseHolder }), {
        action: 'follow',
      });
  });

  it('stops a primary when the Lease is free or held by another Pod', () => {
    const other = planAdoption({ ...primaryKept, leaseHolder: 'db-1' });
    assert.equal(other.action, 'stop');
    assert.match('why' in other ? other.why : '', /held by db-1/);
    const free = planAdoption({ ...primaryKept, leaseHolder: undefined });
    assert.match('why' in free ? free.why : '', /free/);
  });

  it('stops a postgres that does not answer, one the watchdog fired on, and one a restore must replace', () => {
    assert.equal(planAdoption({ ...primaryKept, inRecovery: undefined }).action, 'stop');
    assert.equal(planAdoption({ ...primaryKept, watchdog: 'fired' }).action, 'stop');
    assert.equal(planAdoption({ ...primaryKept, inRecovery: true, restorePending: true }).action, 'stop');
  });
});
