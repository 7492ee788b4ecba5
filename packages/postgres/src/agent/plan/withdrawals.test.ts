import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Withdrawals } from './withdrawals.js';

describe('Withdrawals', () => {
  it('counts a value that went away or was replaced, not one that appeared or stayed', () => {
    const w = new Withdrawals();
    w.see(undefined);
    w.see('*');
    w.see('*');
    assert.equal(w.count, 0, 'a request appearing (or seen again) is no withdrawal');
    w.see(undefined);
    assert.equal(w.count, 1, 'cleared');
    w.see('*');
    assert.equal(w.count, 1, 'the same value back is a new request, not another withdrawal');
    w.see('pod-1');
    assert.equal(w.count, 2, 'replaced by another value');
    w.see(undefined);
    w.see(undefined);
    assert.equal(w.count, 3);
  });
});
