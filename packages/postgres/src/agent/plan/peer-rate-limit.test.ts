import assert from 'node:assert/strict';
import { it } from 'node:test';
import { PeerRateLimiter } from './peer-rate-limit.js';

it('lets a burst through, then the sustained rate, per caller', () => {
  const limiter = new PeerRateLimiter({ perSecond: 10, burst: 5 });
  const allowed = (caller: string, at: number, n: number) =>
    Array.from({ length: n }, () => limiter.take(caller, at)).filter(Boolean).length;
  assert.equal(allowed('a', 0, 20), 5, 'the burst');
  assert.equal(allowed('b', 0, 3), 3, 'another caller has its own bucket');
  assert.equal(allowed('a', 100, 5), 1, '100 ms at 10/s is one more');
  assert.equal(allowed('a', 10_100, 20), 5, 'never more than the burst after a quiet spell');
});
