/**
 * The asynchronous loss bound failover-rto.test.ts holds each crash to, on its own: it must fail
 * for a lost commit beyond ha.maximumLagOnFailover, one at or before the fork, and one another
 * primary acknowledged, or the failover test could not fail when failover lost more than it may.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asyncLoss } from './support/commit-loss.js';

const BOUND = 16 * 1024 * 1024;
const ack = (n: number, lsn: string, host = '10.0.0.1') => ({ n, at: 0, host, lsn });

describe('asyncLoss', () => {
  it('keeps commits past the fork and within the bound, and no loss at all', () => {
    assert.deepEqual(asyncLoss([ack(7, '0/3000100'), ack(8, '0/3000200')], '10.0.0.1', '0/3000000', BOUND), {
      walBytes: 0x200,
      problems: [],
    });
    assert.deepEqual(asyncLoss([], '10.0.0.1', '0/3000000', BOUND), { walBytes: 0, problems: [] });
  });

  it('fails a loss further past the fork than maximumLagOnFailover', () => {
    const { walBytes, problems } = asyncLoss([ack(9, '0/4000001')], '10.0.0.1', '0/3000000', BOUND);
    assert.equal(walBytes, BOUND + 1);
    assert.deepEqual(problems, [
      `${BOUND + 1} bytes of acknowledged WAL lost, more than maximumLagOnFailover (${BOUND})`,
    ]);
  });

  it('fails a lost commit at or before the fork: the new primary dropped what it had', () => {
    assert.deepEqual(asyncLoss([ack(3, '0/2FFFFFF')], '10.0.0.1', '0/3000000', BOUND).problems, [
      'lost commit 3 (0/2FFFFFF) lies at or before the fork at 0/3000000',
    ]);
  });

  it('fails a lost commit that another instance acknowledged', () => {
    assert.deepEqual(asyncLoss([ack(5, '0/3000010', '10.0.0.2')], '10.0.0.1', '0/3000000', BOUND).problems, [
      'lost commit 5 was acknowledged by 10.0.0.2, not the crashed primary',
    ]);
  });
});
