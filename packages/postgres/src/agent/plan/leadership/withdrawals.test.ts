import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Withdrawals } from './withdrawals.js';

describe('Withdrawals', () => {
  it('counts, per value, a value that went away or was replaced, not one that appeared or stayed', () => {
    const w = new Withdrawals();
    w.see(undefined);
    w.see('*');
    w.see('*');
    assert.equal(w.of('*'), 0, 'a request appearing (or seen again) is no withdrawal');
    const before = w.snapshot();
    w.see(undefined);
    assert.equal(w.of('*'), 1, 'cleared');
    w.see('*');
    assert.equal(w.of('*'), 1, 'the same value back is a new request, not another withdrawal');
    w.see('pod-1');
    assert.equal(w.of('*'), 2, 'replaced by another value');
    assert.equal(w.of('pod-1'), 0, 'the value that replaced it was not withdrawn');
    w.see(undefined);
    w.see(undefined);
    assert.equal(w.of('pod-1'), 1);
    assert.equal(before.get('*') ?? 0, 0, 'a snapshot keeps the counts of its moment');
  });

  it('a lagging follower catching up to a served value counts nothing for it', () => {
    // The cache had an older request when the served record was taken, then catches up.
    const w = new Withdrawals();
    w.see('pod-1');
    const asOf = w.snapshot();
    w.see('*');
    assert.equal(w.of('*'), asOf.get('*') ?? 0, 'the served value * was never withdrawn');
    assert.equal(w.of('pod-1'), 1);
  });
});
