import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANNOTATION } from '../../../contract/index.js';
import {
  bindingMembers,
  decideFailsafe,
  decideVouch,
  encodeFailsafeMembers,
  isVouchedFor,
  type MemberListInput,
  memberListFor,
  planMemberList,
  planVouchRound,
  readFailsafeMembers,
  unlistedRefusal,
  type VouchInput,
} from './failsafe-plan.js';

describe('decideVouch (a replica asked by the primary during an API outage)', () => {
  const base: VouchInput = {
    self: 'pg-1',
    caller: 'pg-0',
    failsafeMode: true,
    following: true,
    holder: 'pg-0',
    holderExpired: false,
    vouch: undefined,
    nowMs: 100_000,
    leaseDurationMs: 15_000,
  };
  it('vouches for the holder it follows', () => assert.deepEqual(decideVouch(base), { accept: true }));
  it('refuses with the failsafe mode off', () =>
    assert.deepEqual(decideVouch({ ...base, failsafeMode: false }), {
      accept: false,
      reason: 'failsafe mode is off',
    }));
  it('refuses while it does not follow (booting, cloning, rejoining, leading or stopping)', () =>
    assert.equal(decideVouch({ ...base, following: false }).accept, false));
  it('refuses a caller that is not the holder it last saw, and a free Lease', () => {
    assert.deepEqual(decideVouch({ ...base, holder: 'pg-2' }), {
      accept: false,
      reason: 'the leader Lease is held by pg-2, as far as this instance knows',
    });
    assert.equal(decideVouch({ ...base, holder: undefined }).accept, false);
    assert.equal(decideVouch({ ...base, caller: 'pg-1', holder: 'pg-1' }).accept, false);
  });
  it('refuses a holder whose Lease ran out here, unless an earlier vouch for it still lasts', () => {
    assert.deepEqual(decideVouch({ ...base, holderExpired: true }), {
      accept: false,
      reason: 'the leader Lease of pg-0 ran out and it was not vouched for since',
    });
    // The outage goes on: each vouch keeps the holder's Lease held for one more lease duration.
    assert.deepEqual(decideVouch({ ...base, holderExpired: true, vouch: { holder: 'pg-0', atMs: 90_000 } }), {
      accept: true,
    });
    // Too long since the last vouch: this replica may be taking over.
    assert.equal(decideVouch({ ...base, holderExpired: true, vouch: { holder: 'pg-0', atMs: 85_000 } }).accept, false);
    assert.equal(decideVouch({ ...base, holderExpired: true, vouch: { holder: 'pg-2', atMs: 99_000 } }).accept, false);
  });
});

describe('isVouchedFor', () => {
  it('lasts a lease duration from the vouch, for that holder only', () => {
    const vouch = { holder: 'pg-0', atMs: 1_000 };
    assert.equal(isVouchedFor(vouch, 'pg-0', 15_999, 15_000), true);
    assert.equal(isVouchedFor(vouch, 'pg-0', 16_000, 15_000), false);
    assert.equal(isVouchedFor(vouch, 'pg-2', 2_000, 15_000), false);
    assert.equal(isVouchedFor(vouch, undefined, 2_000, 15_000), false);
    assert.equal(isVouchedFor(undefined, 'pg-0', 2_000, 15_000), false);
  });
});

describe('decideFailsafe (the primary, from its members answers)', () => {
  const yes = (name: string) => ({ name, answer: { name, accepted: true } });
  it('leads on only when every other member vouched', () => {
    assert.deepEqual(decideFailsafe([yes('pg-1'), yes('pg-2')]), {
      keep: true,
      message: 'vouched for by every other member (pg-1, pg-2)',
    });
  });
  it('fences when one member refused or did not answer, and says which', () => {
    assert.deepEqual(
      decideFailsafe([
        yes('pg-1'),
        { name: 'pg-2', answer: undefined, problem: 'timed out' },
        { name: 'pg-3', answer: { name: 'pg-3', accepted: false, reason: 'failsafe mode is off' } },
      ]),
      {
        keep: false,
        message: 'not vouched for: pg-2 did not answer (timed out); pg-3 refused (failsafe mode is off)',
      },
    );
  });
  it('a cluster of one leads on (nobody else could take over)', () =>
    assert.deepEqual(decideFailsafe([]), { keep: true, message: 'no other member to ask' }));
});

describe("the member list on the Lease (Patroni's /failsafe key)", () => {
  const list = { holder: 'pg-0', members: ['pg-0', 'pg-1'] };
  it('round-trips through its annotation; a malformed one binds nobody', () => {
    const annotations = { [ANNOTATION.failsafeMembers]: encodeFailsafeMembers(list) };
    assert.equal(ANNOTATION.failsafeMembers, 'postgres.kanri.dev/failsafe-members');
    assert.deepEqual(readFailsafeMembers(annotations), list);
    assert.equal(readFailsafeMembers(undefined), undefined);
    for (const raw of [
      '',
      'pg-0,pg-1',
      '{"holder":"","members":[]}',
      '{"holder":"pg-0","members":"pg-1"}',
      '{"holder":"pg-0","members":[1]}',
    ])
      assert.equal(readFailsafeMembers({ [ANNOTATION.failsafeMembers]: raw }), undefined, raw);
    assert.deepEqual(memberListFor('pg-0', ['pg-2', 'pg-1', '', 'pg-1']), {
      holder: 'pg-0',
      members: ['pg-0', 'pg-1', 'pg-2'],
    });
  });

  it('binds only while its writer holds the Lease: an unlisted instance never takes it from that holder', () => {
    assert.equal(bindingMembers(list, 'pg-0'), list);
    assert.equal(bindingMembers(list, 'pg-1'), undefined, "a former holder's list binds nobody");
    assert.equal(bindingMembers(list, undefined), undefined, 'a free Lease: its holder stopped before releasing it');
    assert.match(
      unlistedRefusal('pg-2', 'pg-0', list) ?? '',
      /^this instance is not on the failsafe member list of pg-0 \(pg-0, pg-1\)/,
    );
    assert.equal(unlistedRefusal('pg-1', 'pg-0', list), undefined);
    assert.equal(unlistedRefusal('pg-2', 'pg-1', list), undefined);
    assert.equal(
      unlistedRefusal('pg-2', 'pg-0', undefined),
      undefined,
      'no list (an older agent wrote the Lease): as before',
    );
  });

  describe('planMemberList (the primary, each lap of its tasks)', () => {
    const base: MemberListInput = {
      self: 'pg-0',
      failsafeMode: true,
      podsSynced: true,
      pods: ['pg-0', 'pg-1'],
      published: list,
      leadingOnVouches: false,
    };
    it('writes only when the members changed', () => {
      assert.equal(planMemberList(base), undefined);
      assert.deepEqual(planMemberList({ ...base, pods: ['pg-1', 'pg-2', 'pg-0'] }), {
        write: { holder: 'pg-0', members: ['pg-0', 'pg-1', 'pg-2'] },
      });
      assert.deepEqual(planMemberList({ ...base, pods: ['pg-0'] }), { write: { holder: 'pg-0', members: ['pg-0'] } });
      // A list of a former holder, or none: its own.
      assert.deepEqual(planMemberList({ ...base, published: { holder: 'pg-1', members: ['pg-0', 'pg-1'] } }), {
        write: list,
      });
      assert.deepEqual(planMemberList({ ...base, published: undefined }), { write: list });
      assert.equal(planMemberList({ ...base, published: undefined, podsSynced: false }), undefined);
    });
    it('never while it leads on vouches: a member added then could take over from an extension it never granted', () =>
      assert.equal(planMemberList({ ...base, pods: ['pg-0', 'pg-1', 'pg-2'], leadingOnVouches: true }), undefined));
    it('removes the list once the failsafe mode is off', () => {
      assert.deepEqual(planMemberList({ ...base, failsafeMode: false }), { write: null });
      assert.equal(planMemberList({ ...base, failsafeMode: false, published: undefined }), undefined);
    });
  });

  describe('planVouchRound (the primary, when the API server cannot be reached)', () => {
    it('asks the members it published, not the Pods it sees', () =>
      assert.deepEqual(planVouchRound({ self: 'pg-0', published: list, unconfirmed: [] }), { ask: ['pg-1'] }));
    it('asks the members of every write that may have landed', () =>
      assert.deepEqual(
        planVouchRound({
          self: 'pg-0',
          published: list,
          unconfirmed: [{ holder: 'pg-0', members: ['pg-0', 'pg-2'] }],
        }),
        { ask: ['pg-1', 'pg-2'] },
      ));
    it('does not lead on without its own list surely on the Lease', () => {
      assert.match(
        (planVouchRound({ self: 'pg-0', published: undefined, unconfirmed: [] }) as { refuse: string }).refuse,
        /has not published its member list/,
      );
      assert.ok('refuse' in planVouchRound({ self: 'pg-0', published: { ...list, holder: 'pg-1' }, unconfirmed: [] }));
      assert.ok('refuse' in planVouchRound({ self: 'pg-0', published: list, unconfirmed: [null] }));
    });
    it('a cluster of one asks nobody', () =>
      assert.deepEqual(
        planVouchRound({ self: 'pg-0', published: { holder: 'pg-0', members: ['pg-0'] }, unconfirmed: [] }),
        { ask: [] },
      ));
  });
});
