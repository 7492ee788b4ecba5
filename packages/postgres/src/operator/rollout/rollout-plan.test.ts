import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRollout, type RolloutInput, type RolloutMember } from './rollout-plan.js';

const m = (name: string, over: Partial<RolloutMember> = {}): RolloutMember => ({
  name,
  primary: false,
  updated: false,
  ready: true,
  lagBytes: 0,
  deleting: false,
  ...over,
});
const input = (members: RolloutMember[], over: Partial<RolloutInput> = {}): RolloutInput => ({
  members,
  strategy: 'unsupervised',
  method: 'switchover',
  maximumLagBytes: 1000,
  switchoverPending: false,
  nowMs: 1_000_000,
  readyTimeoutMs: 60_000,
  ...over,
});

describe('planRollout', () => {
  it('is idle when every Pod is up to date', () => {
    const step = planRollout(input([m('a', { primary: true, updated: true }), m('b', { updated: true })]));
    assert.equal(step.phase, 'Idle');
    assert.deepEqual([step.updated, step.desired], [2, 2]);
  });

  it('replaces replicas one at a time, in name order, before the primary', () => {
    const members = [m('a', { primary: true }), m('c'), m('b')];
    assert.deepEqual(planRollout(input(members)).action, { kind: 'replace', pod: 'b' });
    const afterB = [m('a', { primary: true }), m('b', { updated: true }), m('c')];
    assert.deepEqual(planRollout(input(afterB)).action, { kind: 'replace', pod: 'c' });
  });

  it('waits while a replaced Pod is gone, not ready, or lagging', () => {
    assert.equal(
      planRollout(input([m('a', { primary: true }), m('b', { deleting: true }), m('c')])).action.kind,
      'none',
    );
    const notReady = planRollout(
      input([m('a', { primary: true }), m('b', { updated: true, ready: false, notReadySinceMs: 990_000 }), m('c')]),
    );
    assert.equal(notReady.phase, 'WaitingForInstance');
    assert.equal(notReady.current, 'b');
    const lagging = planRollout(input([m('a', { primary: true }), m('b', { updated: true, lagBytes: 5000 }), m('c')]));
    assert.equal(lagging.phase, 'WaitingForInstance');
    assert.match(lagging.message, /5000 bytes behind/);
  });

  it('halts on an updated instance that cannot run or stays unready past the timeout, touching nothing', () => {
    const cannot = planRollout(
      input([
        m('a', { primary: true }),
        m('b', { updated: true, ready: false, failure: 'ErrImagePull: no x' }),
        m('c'),
      ]),
    );
    assert.equal(cannot.phase, 'Halted');
    assert.equal(cannot.reason, 'InstanceCannotRun');
    assert.equal(cannot.action.kind, 'none');
    assert.match(cannot.message, /^b cannot run: ErrImagePull/);
    const slow = planRollout(
      input([m('a', { primary: true }), m('b', { updated: true, ready: false, notReadySinceMs: 900_000 }), m('c')]),
    );
    assert.equal(slow.phase, 'Halted');
    assert.equal(slow.reason, 'InstanceNotReady');
  });

  it('after a revert, replaces the instance that halted it first', () => {
    const reverted = [m('a', { primary: true, updated: true }), m('b', { ready: false }), m('c', { updated: true })];
    assert.deepEqual(planRollout(input(reverted)).action, { kind: 'replace', pod: 'b' });
  });

  it('switches over to the least lagging updated replica within the limit, then replaces the old primary', () => {
    const members = [
      m('a', { primary: true }),
      m('b', { updated: true, lagBytes: 800 }),
      m('c', { updated: true, lagBytes: 100 }),
    ];
    assert.deepEqual(planRollout(input(members)).action, { kind: 'switchover', to: 'c' });
    assert.equal(planRollout(input(members, { switchoverPending: true })).phase, 'SwitchingOver');
    assert.equal(planRollout(input(members, { switchoverPending: true })).action.kind, 'none');
    const after = [m('a'), m('b', { updated: true }), m('c', { primary: true, updated: true })];
    assert.deepEqual(planRollout(input(after)).action, { kind: 'replace', pod: 'a' });
  });

  it('never switches over to a replica beyond maximumLagOnFailover: it waits and says why', () => {
    const step = planRollout(
      input([m('a', { primary: true }), m('b', { updated: true, lagBytes: 900 })], { maximumLagBytes: 100 }),
    );
    // b lagging past the limit is first a wait for it to catch up, never a switchover to it.
    assert.equal(step.action.kind, 'none');
    assert.match(step.message, /b/);
  });

  it('supervised: waits for the user after the replicas; restart: replaces the primary', () => {
    const members = [m('a', { primary: true }), m('b', { updated: true })];
    const supervised = planRollout(input(members, { strategy: 'supervised' }));
    assert.equal(supervised.phase, 'WaitingForUser');
    assert.equal(supervised.action.kind, 'none');
    assert.deepEqual(planRollout(input(members, { method: 'restart' })).action, { kind: 'replace', pod: 'a' });
  });

  it('a single instance is replaced in place: there is nobody to hand over to', () => {
    const step = planRollout(input([m('a', { primary: true })]));
    assert.deepEqual(step.action, { kind: 'replace', pod: 'a' });
    assert.match(step.message, /no updated replica/);
  });
});
