import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideFailsafe, decideVouch, isVouchedFor, type VouchInput } from './failsafe-plan.js';

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
