/** The small per-role planners: a replica's lap, a rejoin's next step, how a leadership starts, a switchover's target. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LiveStatus } from '../../../contract/index.js';
import { planLeadershipStart } from './leadership-plan.js';
import { checkpointedTimeline, planRejoin } from './rejoin-plan.js';
import { planReplicaLap } from './replica-plan.js';
import { planSwitchoverTarget } from './switchover-plan.js';

describe('planReplicaLap', () => {
  const base = { self: 'pg-1', diverged: undefined, leaseExists: true, holder: 'pg-0', expired: false, vouched: false };
  it('follows a live holder', () => assert.deepEqual(planReplicaLap(base), { kind: 'follow', holder: 'pg-0' }));
  it('rejoins first when its WAL diverged, whatever the Lease says', () =>
    assert.deepEqual(planReplicaLap({ ...base, diverged: 'forked off' }), { kind: 'rejoin', line: 'forked off' }));
  it('re-clones when the primary removed WAL it needs, while that primary leads', () =>
    assert.deepEqual(planReplicaLap({ ...base, walRemoved: 'requested WAL segment 0001 has already been removed' }), {
      kind: 'reclone',
      line: 'requested WAL segment 0001 has already been removed',
    }));
  it('does not re-clone without a live primary to clone (a failover comes first)', () => {
    const walRemoved = 'requested WAL segment 0001 has already been removed';
    assert.deepEqual(planReplicaLap({ ...base, walRemoved, expired: true }), { kind: 'consider-failover' });
    assert.deepEqual(planReplicaLap({ ...base, walRemoved, holder: 'pg-1' }), { kind: 'confirm-lead' });
  });
  it('confirms before leading when the Lease names it', () =>
    assert.deepEqual(planReplicaLap({ ...base, holder: 'pg-1' }), { kind: 'confirm-lead' }));
  it('considers a failover once the holder expired, or the Lease is free', () => {
    assert.deepEqual(planReplicaLap({ ...base, expired: true }), { kind: 'consider-failover' });
    assert.deepEqual(planReplicaLap({ ...base, holder: undefined, expired: true }), { kind: 'consider-failover' });
  });
  it('follows a holder it vouched for in failsafe mode even though its Lease ran out here', () => {
    assert.deepEqual(planReplicaLap({ ...base, expired: true, vouched: true }), { kind: 'follow', holder: 'pg-0' });
    // A vouch never makes a free Lease held.
    assert.deepEqual(planReplicaLap({ ...base, holder: undefined, expired: true, vouched: true }), {
      kind: 'consider-failover',
    });
  });
  it('waits while no Lease exists (nothing was ever bootstrapped)', () =>
    assert.deepEqual(planReplicaLap({ ...base, leaseExists: false, holder: undefined, expired: false }), {
      kind: 'wait',
    }));
});

describe('planRejoin', () => {
  it('leads when the Lease came back to it', () =>
    assert.deepEqual(planRejoin({ self: 'pg-0', holder: 'pg-0', podIP: undefined, ready: false }), { kind: 'lead' }));
  it('waits for the new primary to be ready and addressable', () => {
    assert.deepEqual(planRejoin({ self: 'pg-0', holder: 'pg-1', podIP: '10.0.0.2', ready: false }), { kind: 'wait' });
    assert.deepEqual(planRejoin({ self: 'pg-0', holder: 'pg-1', podIP: undefined, ready: true }), { kind: 'wait' });
  });
  it('rewinds from a ready primary', () =>
    assert.deepEqual(planRejoin({ self: 'pg-0', holder: 'pg-1', podIP: '10.0.0.2', ready: true }), {
      kind: 'rewind',
      holder: 'pg-1',
      podIP: '10.0.0.2',
    }));
});

describe('planLeadershipStart', () => {
  it('promotes a running standby before rewriting files when synchronous_standby_names already fits', () => {
    assert.equal(
      planLeadershipStart({ postgresRunning: true, writtenSynchronousStandbyNames: '', synchronousStandbyNames: '' })
        .promoteFirst,
      true,
    );
  });
  it('writes the synchronous setting first when it must change, and when postgres is not running', () => {
    const syncChange = { postgresRunning: true, writtenSynchronousStandbyNames: '', synchronousStandbyNames: '1 (*)' };
    assert.equal(planLeadershipStart(syncChange).promoteFirst, false);
    const stopped = { postgresRunning: false, writtenSynchronousStandbyNames: '', synchronousStandbyNames: '' };
    assert.equal(planLeadershipStart(stopped).promoteFirst, false);
  });
});

describe('planSwitchoverTarget', () => {
  const status = (name: string, receivedLsn: string, extra: Partial<LiveStatus> = {}): LiveStatus => ({
    name,
    role: 'replica',
    ready: true,
    timeline: 1,
    systemIdentifier: '1',
    receivedLsn,
    replayedLsn: receivedLsn,
    lagBytes: 0,
    updatedAt: '',
    candidate: true,
    receiverStatus: 'streaming',
    ...extra,
  });
  const input = {
    self: 'pg-0',
    request: '*',
    streaming: new Set(['pg-1', 'pg-2']),
    currentLsn: '0/3000000',
    maximumLagBytes: 1024 * 1024,
  };
  it('picks the most advanced fit replica for *', () => {
    const target = planSwitchoverTarget({
      ...input,
      peers: [
        { name: 'pg-1', ip: '10.0.0.1', status: status('pg-1', '0/2F00000') },
        { name: 'pg-2', ip: '10.0.0.2', status: status('pg-2', '0/3000000') },
      ],
    });
    assert.deepEqual(target, { name: 'pg-2', ip: '10.0.0.2' });
  });
  it('refuses with every reason: lagging, not streaming, not answering, not a candidate', () => {
    const target = planSwitchoverTarget({
      ...input,
      streaming: new Set(['pg-1', 'pg-4']),
      peers: [
        { name: 'pg-1', ip: '10.0.0.1', status: status('pg-1', '0/1000000') },
        { name: 'pg-2', ip: '10.0.0.2', status: status('pg-2', '0/3000000') },
        { name: 'pg-3', ip: '10.0.0.3', status: undefined },
        {
          name: 'pg-4',
          ip: '10.0.0.4',
          status: status('pg-4', '0/3000000', { candidate: false, candidateWhy: 'rejoining' }),
        },
      ],
    });
    assert.ok('why' in target);
    assert.match(target.why, /pg-1: it lags 32 MiB > 1 MiB/);
    assert.match(target.why, /pg-2: it is not streaming from this primary/);
    assert.match(target.why, /pg-3: its agent does not answer/);
    assert.match(target.why, /pg-4: rejoining/);
  });
  it('refuses itself and strangers by name', () => {
    assert.deepEqual(planSwitchoverTarget({ ...input, request: 'pg-0', peers: [] }), {
      why: 'pg-0 is the primary already',
    });
    assert.deepEqual(planSwitchoverTarget({ ...input, request: 'other', peers: [] }), {
      why: 'other is not an instance of this cluster',
    });
  });
});

it("sees whether a primary's pg_control has the timeline it writes on (pg_rewind reads it there)", () => {
  assert.deepEqual(checkpointedTimeline({ checkpointed: 1, walfile: '000000020000000000000003' }), {
    timeline: 2,
    checkpointed: false,
  });
  assert.deepEqual(checkpointedTimeline({ checkpointed: '10', walfile: '0000000A0000000000000003' }), {
    timeline: 10,
    checkpointed: true,
  });
  assert.equal(checkpointedTimeline({ checkpointed: 1, walfile: null }), undefined, 'in recovery');
});
