import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type Candidate, decideFailover, type FailoverInput } from './failover-plan.js';
import { chooseSynchronous, planSync, renderSynchronousStandbyNames, type SyncInput } from './sync-plan.js';

const replica = (name: string, receivedLsn: string, replayedLsn = receivedLsn, extra: Partial<Candidate> = {}) => ({
  name,
  eligible: true,
  systemIdentifier: '7',
  timeline: 1,
  receivedLsn,
  replayedLsn,
  ...extra,
});
const input = (self: string, candidates: Candidate[], extra: Partial<FailoverInput> = {}): FailoverInput => ({
  self,
  candidates,
  systemIdentifier: '7',
  primaryLsn: '0/3000000',
  maximumLagBytes: 16 * 1024 * 1024,
  synchronousStandbys: undefined,
  graceOver: false,
  ...extra,
});

it('failover: the most advanced replica by received, then replayed LSN, then name takes over; others wait', () => {
  const a = replica('db-a', '0/3000000', '0/2000000');
  const b = replica('db-b', '0/3000000', '0/3000000');
  const c = replica('db-c', '0/2000000');
  const taking = decideFailover(input('db-b', [a, b, c]));
  assert.equal(taking.take, true);
  assert.match(
    taking.message,
    /ahead of db-a received 0\/3000000, replayed 0\/2000000; db-c received 0\/2000000, replayed 0\/2000000\)$/,
  );
  const waiting = decideFailover(input('db-a', [a, b, c]));
  assert.equal(waiting.take, false);
  assert.match(waiting.message, /waiting: db-b is more advanced/);
  assert.equal(decideFailover(input('db-c', [a, b, c])).take, false);
  // Equal positions: the Pod name decides, the same way on every replica.
  const twin = replica('db-z', '0/3000000', '0/3000000');
  assert.equal(decideFailover(input('db-b', [twin, b])).take, true);
  assert.equal(decideFailover(input('db-z', [twin, b])).take, false);
  // After the grace period a lesser candidate goes ahead of a better one that did not act.
  assert.equal(decideFailover(input('db-a', [a, b], { graceOver: true })).take, true);
});

it('failover: never beyond the lag limit, never outside the synchronous set, never an ineligible or foreign one', () => {
  const far = replica('db-b', '0/1000000');
  const decision = decideFailover(input('db-b', [far], { maximumLagBytes: 1024 }));
  assert.equal(decision.take, false);
  assert.equal(decision.message, 'waiting: no replica within lag limit (db-b lags 32 MiB > 1 kiB)');
  const a = replica('db-a', '0/2000000');
  const b = replica('db-b', '0/2000000');
  assert.match(
    decideFailover(input('db-a', [a, b], { synchronousStandbys: ['db-b'] })).message,
    /waiting: synchronous mode, and this replica is neither a synchronous standby \(db-b\) nor ahead of them/,
  );
  assert.equal(decideFailover(input('db-b', [a, b], { synchronousStandbys: ['db-b'] })).take, true);
  assert.match(decideFailover(input('db-a', [{ ...a, eligible: false, why: 'rejoining' }])).message, /rejoining/);
  assert.equal(decideFailover(input('db-b', [{ ...a, systemIdentifier: '8' }, b])).take, true);
});

it('failover, synchronous mode: a replica that flushed strictly more than every answering published standby may lead', () => {
  const standby = replica('db-b', '0/2000000');
  const ahead = replica('db-a', '0/2000100');
  const published = { synchronousStandbys: ['db-b'] };
  const taking = decideFailover(input('db-a', [ahead, standby], published));
  assert.equal(taking.take, true);
  assert.match(taking.message, /ahead of db-b received 0\/2000000/);
  assert.equal(decideFailover(input('db-b', [ahead, standby], published)).take, false);
  // Level with the standby is not ahead of it: the published standby leads.
  const level = replica('db-a', '0/2000000', '0/2000000', { name: 'db-0' });
  assert.equal(decideFailover(input('db-0', [level, standby], published)).take, false);
  assert.equal(decideFailover(input('db-b', [level, standby], published)).take, true);
  // Another timeline's positions do not compare.
  const otherTimeline = replica('db-a', '0/2000100', '0/2000100', { timeline: 2 });
  assert.equal(decideFailover(input('db-a', [otherTimeline, standby], published)).take, false);
  // No published standby answered: nothing shows what was acknowledged, so nobody else may lead.
  assert.equal(decideFailover(input('db-a', [ahead], published)).take, false);
  // Ahead of one published standby but not of the other that answered.
  const second = replica('db-c', '0/2000200');
  const both = { synchronousStandbys: ['db-b', 'db-c'] };
  assert.equal(decideFailover(input('db-a', [ahead, standby, second], both)).take, false);
  assert.equal(decideFailover(input('db-c', [ahead, standby, second], both)).take, true);
});

const sync = (extra: Partial<SyncInput>): SyncInput => ({
  number: 1,
  published: [],
  configured: [],
  connections: [],
  pending: undefined,
  currentLsn: '0/5000000',
  ...extra,
});
const streaming = (name: string, syncState = 'async', flushLsn = '0/5000000') => ({
  name,
  state: 'streaming',
  syncState,
  flushLsn,
});

it('synchronous standbys: configured first, published only once postgres waits for them and they caught up', () => {
  assert.equal(renderSynchronousStandbyNames(1, ['db-1']), 'FIRST 1 ("db-1")');
  assert.equal(renderSynchronousStandbyNames(2, ['*']), 'FIRST 2 (*)');
  assert.equal(renderSynchronousStandbyNames(0, ['db-1']), '');
  // A new cluster: nothing until a replica streams.
  assert.equal(planSync(sync({})).kind, 'wait');
  const b = streaming('db-b');
  assert.deepEqual(planSync(sync({ connections: [b] })), { kind: 'configure', members: ['db-b'] });
  const pending = { members: ['db-b'], lsn: undefined };
  assert.equal(planSync(sync({ configured: ['db-b'], connections: [b], pending })).kind, 'wait');
  const sb = streaming('db-b', 'sync', '0/4000000');
  assert.deepEqual(planSync(sync({ configured: ['db-b'], connections: [sb], pending })), {
    kind: 'capture',
    lsn: '0/5000000',
  });
  const captured = { members: ['db-b'], lsn: '0/5000000' };
  assert.equal(planSync(sync({ configured: ['db-b'], connections: [sb], pending: captured })).kind, 'wait');
  const caughtUp = streaming('db-b', 'sync', '0/5000100');
  assert.deepEqual(planSync(sync({ configured: ['db-b'], connections: [caughtUp], pending: captured })), {
    kind: 'publish',
    members: ['db-b'],
  });
  assert.equal(planSync(sync({ configured: ['db-b'], published: ['db-b'], connections: [caughtUp] })).kind, 'none');
});

it('synchronous standbys: a member leaves the published set before postgres stops waiting for it; strict', () => {
  const c = streaming('db-c');
  // db-b is gone, db-c streams: unpublish db-b first, then configure db-c.
  assert.deepEqual(planSync(sync({ configured: ['db-b'], published: ['db-b'], connections: [c] })), {
    kind: 'publish',
    members: [],
  });
  assert.deepEqual(planSync(sync({ configured: ['db-b'], published: [], connections: [c] })), {
    kind: 'configure',
    members: ['db-c'],
  });
  // Nobody healthy: keep waiting for db-b (commits block) rather than run without a synchronous copy.
  assert.deepEqual(chooseSynchronous(1, ['db-b'], []), ['db-b']);
  assert.equal(planSync(sync({ configured: ['db-b'], published: ['db-b'], connections: [] })).kind, 'none');
  // After a promotion: any standby until one is named.
  assert.deepEqual(planSync(sync({ configured: ['*'], connections: [c] })), { kind: 'configure', members: ['db-c'] });
  // Asynchronous again: stop waiting, then unpublish.
  assert.deepEqual(planSync(sync({ number: 0, configured: ['db-c'], published: ['db-c'] })), {
    kind: 'configure',
    members: [],
  });
  assert.deepEqual(planSync(sync({ number: 0, published: ['db-c'] })), { kind: 'publish', members: [] });
});

it('failover: nobody takes over from a holder this replica vouched for in failsafe mode, however advanced', () => {
  const a = replica('db-a', '0/3000000');
  const decision = decideFailover(input('db-a', [a], { vouchedFor: 'db-p', graceOver: true }));
  assert.deepEqual(decision, {
    take: false,
    message: 'waiting: this replica vouched for db-p in failsafe mode less than a lease duration ago',
  });
  assert.equal(decideFailover(input('db-a', [a], { graceOver: true })).take, true);
});

it('failover: a replica that waits is told which one should win, and only one that may', () => {
  const a = replica('db-a', '0/2000000');
  const b = replica('db-b', '0/2000000');
  const outranked = decideFailover(input('db-a', [a, replica('db-b', '0/3000000')]));
  assert.equal(outranked.take, false);
  assert.equal(outranked.take === false && outranked.best, 'db-b');
  // Synchronous mode: the published standby, not this replica however far it is.
  const notStandby = decideFailover(input('db-a', [a, b], { synchronousStandbys: ['db-b'] }));
  assert.equal(notStandby.take === false && notStandby.best, 'db-b');
  // Beyond the lag limit: the one within it.
  const lagging = decideFailover(
    input('db-a', [replica('db-a', '0/1000000'), replica('db-b', '0/3000000')], { maximumLagBytes: 1024 }),
  );
  assert.equal(lagging.take === false && lagging.best, 'db-b');
  // Nobody may win (every one beyond the limit; the only standby ineligible): nobody is named.
  const nobody = decideFailover(input('db-a', [a, b], { maximumLagBytes: 1024 }));
  assert.equal(nobody.take === false && nobody.best, undefined);
  const ineligible = decideFailover(
    input('db-a', [a, { ...b, eligible: false, why: 'rejoining' }], { synchronousStandbys: ['db-b'] }),
  );
  assert.equal(ineligible.take === false && ineligible.best, undefined);
});

it('failover: an instance not on the member list the holder published never takes over from it, and is not waited for', () => {
  const listed = { holder: 'db-p', members: ['db-a', 'db-p'] };
  // db-n joined while db-p was cut off from the API server: the most advanced, the grace over, and still not.
  const newcomer = replica('db-n', '0/3000000');
  const a = replica('db-a', '0/2000000');
  assert.deepEqual(decideFailover(input('db-n', [newcomer, a], { failsafeMembers: listed, graceOver: true })), {
    take: false,
    message:
      "waiting: this instance is not on the failsafe member list of db-p (db-a, db-p): db-p may be leading on those members' vouches without having asked this one, so only they may take over from it",
  });
  // A listed replica ranks among the listed only: it does not wait a grace period for db-n.
  assert.equal(decideFailover(input('db-a', [newcomer, a], { failsafeMembers: listed })).take, true);
  // Once the holder lists it (or without a list), it is a candidate like any other.
  const relisted = { holder: 'db-p', members: ['db-a', 'db-n', 'db-p'] };
  assert.equal(decideFailover(input('db-n', [newcomer, a], { failsafeMembers: relisted })).take, true);
  assert.equal(decideFailover(input('db-n', [newcomer, a])).take, true);
});
