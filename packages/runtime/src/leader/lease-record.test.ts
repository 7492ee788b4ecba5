/** Unit tests of the pure lease rules: expiry on the local clock only, transitions, the release record. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatMicroTime,
  holderSpec,
  judgeLease,
  type Lease,
  observe,
  recordOf,
  releasedSpec,
} from './lease-record.js';

function lease(spec: Lease['spec'], resourceVersion = '1'): Lease {
  return { metadata: { name: 'lock', namespace: 'ops', resourceVersion }, spec };
}

describe('lease records', () => {
  it('judges expiry by when this candidate saw the record change, whatever renewTime says', () => {
    // A renewTime far in the past (a holder with a slow clock) must not make the lease look expired...
    const stale = lease({ holderIdentity: 'a', leaseDurationSeconds: 10, renewTime: '2001-01-01T00:00:00.000000Z' });
    const first = observe(undefined, stale, 1_000);
    assert.equal(judgeLease(first, 'b', 1_000), 'held');
    assert.equal(judgeLease(first, 'b', 10_999), 'held');
    assert.equal(judgeLease(first, 'b', 11_000), 'expired');

    // ...and every renewal restarts the clock, even if the holder's clock runs backwards.
    const renewed = observe(
      first,
      { ...stale, spec: { ...stale.spec, renewTime: '2000-01-01T00:00:00.000000Z' } },
      9_000,
    );
    assert.equal(renewed.observedAtMs, 9_000);
    assert.equal(judgeLease(renewed, 'b', 11_000), 'held');
    assert.equal(judgeLease(renewed, 'b', 19_000), 'expired');
  });

  it('keeps the observation time when the record did not change, even if metadata did', () => {
    const spec = { holderIdentity: 'a', leaseDurationSeconds: 10, renewTime: formatMicroTime(new Date(5)) };
    const first = observe(undefined, lease(spec, '1'), 1_000);
    const again = observe(first, lease(spec, '7'), 8_000);
    assert.equal(again.observedAtMs, 1_000, 'a label edit is no sign of life from the holder');
    assert.equal(again.lease.metadata?.resourceVersion, '7', 'the newest object is kept for the next write');
    assert.equal(judgeLease(again, 'b', 11_000), 'expired');
  });

  it('treats an empty or missing holder as free, and our own record as ours', () => {
    assert.equal(judgeLease(observe(undefined, lease({ holderIdentity: '' }), 0), 'b', 0), 'free');
    assert.equal(judgeLease(observe(undefined, lease(undefined), 0), 'b', 0), 'free');
    const mine = observe(undefined, lease({ holderIdentity: 'b', leaseDurationSeconds: 1 }), 0);
    assert.equal(judgeLease(mine, 'b', 60_000), 'ours');
  });

  it('counts transitions on take-over, not on renewal, and starts a new Lease at zero', () => {
    const now = new Date('2025-03-04T05:06:07.089Z');
    const created = holderSpec(undefined, 'a', 15, now);
    assert.deepEqual(created, {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2025-03-04T05:06:07.089000Z',
      renewTime: '2025-03-04T05:06:07.089000Z',
      leaseTransitions: 0,
    });
    const later = new Date('2025-03-04T05:06:09.000Z');
    const renewed = holderSpec(recordOf(lease(created)), 'a', 15, later);
    assert.equal(renewed.leaseTransitions, 0);
    assert.equal(renewed.acquireTime, created.acquireTime);
    assert.equal(renewed.renewTime, '2025-03-04T05:06:09.000000Z');
    const taken = holderSpec(recordOf(lease(renewed)), 'b', 15, later);
    assert.equal(taken.leaseTransitions, 1);
    assert.equal(taken.acquireTime, '2025-03-04T05:06:09.000000Z');
  });

  it('releases as client-go does: no holder, one second, transitions kept', () => {
    const held = recordOf(lease({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 4 }));
    const released = releasedSpec(held, new Date(0));
    assert.deepEqual(released, {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: '1970-01-01T00:00:00.000000Z',
      renewTime: '1970-01-01T00:00:00.000000Z',
      leaseTransitions: 4,
    });
    assert.equal(holderSpec(recordOf(lease(released)), 'b', 15, new Date(0)).leaseTransitions, 5);
  });

  it('formats MicroTime with six fractional digits', () => {
    assert.match(formatMicroTime(new Date()), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });
});
