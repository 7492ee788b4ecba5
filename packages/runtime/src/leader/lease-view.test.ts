/** The follower's view: absence, ordering of versions, and the one expiry rule. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_LEASE_DURATION_SECONDS, type Lease } from './lease-record.js';
import { foldLease, holderOf, leaseExpiresAtMs } from './lease-view.js';
import { withAnnotations } from './lease-writes.js';

const lease = (resourceVersion: string, spec: Lease['spec']): Lease => ({
  metadata: { name: 'pg-leader', namespace: 'db', resourceVersion },
  spec,
});

describe('lease views', () => {
  it('knows a missing Lease apart from a not-yet-seen one, and a free Lease expires at once', () => {
    const missing = foldLease(undefined, undefined, 5);
    assert.equal(missing.exists, false);
    assert.equal(holderOf(missing), undefined);
    const free = foldLease(missing, lease('1', { holderIdentity: '' }), 7);
    assert.equal(free.exists, true);
    assert.equal(leaseExpiresAtMs(free), 7);
  });

  it('never lets an older version replace a newer one', () => {
    const newer = foldLease(undefined, lease('20', { holderIdentity: 'b', leaseDurationSeconds: 6 }), 0);
    const raced = foldLease(newer, lease('19', { holderIdentity: 'a', leaseDurationSeconds: 6 }), 1);
    assert.equal(holderOf(raced), 'b');
  });

  it('measures expiry from when the record changed, not from annotation edits', () => {
    const held = foldLease(undefined, lease('1', { holderIdentity: 'a', leaseDurationSeconds: 6 }), 1_000);
    const annotated = foldLease(
      held,
      withAnnotations({ ...held.lease, metadata: { ...held.lease?.metadata, resourceVersion: '2' } } as Lease, {
        x: 'y',
      }),
      5_000,
    );
    assert.equal(leaseExpiresAtMs(annotated), 7_000);
    assert.equal(annotated.lease?.metadata?.annotations?.x, 'y');
  });

  it('gives a holder without a stated duration the one default, never zero', () => {
    const view = foldLease(undefined, lease('1', { holderIdentity: 'a' }), 0);
    assert.equal(leaseExpiresAtMs(view), DEFAULT_LEASE_DURATION_SECONDS * 1000);
  });

  it('withAnnotations sets and removes keys without touching others', () => {
    const base = withAnnotations(lease('1', {}), { keep: '1', drop: '2' });
    const next = withAnnotations(base, { drop: null, add: '3' });
    assert.deepEqual(next.metadata?.annotations, { keep: '1', add: '3' });
  });
});
