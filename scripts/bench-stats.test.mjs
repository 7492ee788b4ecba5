// The benchmarks' statistics: medians, and paired trials in which a failed trial counts against
// the system that failed instead of leaving the comparison.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAILED, median, pairedDifferences, ratio, signTest } from './bench-stats.mjs';

describe('bench statistics', () => {
  it('takes the median of the figures present', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
    assert.equal(median([null, 5, undefined, Number.NaN]), 5);
    assert.equal(median([]), null);
    assert.equal(ratio(1, 0), null);
    assert.equal(ratio(2, 3), 0.667);
  });

  it('gives the exact two-sided sign test', () => {
    assert.equal(signTest([-1, -1, -1, -1, -1, -1]), 0.03125);
    assert.equal(signTest([1, -1]), 1);
    assert.equal(signTest([0, 0]), 1);
  });

  it('counts a failed trial against its system in the signs, and keeps it out of the differences', () => {
    const d = pairedDifferences([
      [10, 12],
      [FAILED, 11],
      [9, 9],
      [8, FAILED],
      [FAILED, FAILED],
      [undefined, 7],
    ]);
    assert.equal(d.pairs, 2, 'differences only where both succeeded');
    assert.deepEqual(d.diffsMs, [-2, 0]);
    assert.equal(d.medianMs, -1);
    assert.equal(d.firstFailed, 1);
    assert.equal(d.secondFailed, 1);
    assert.equal(d.bothFailed, 1);
    assert.equal(d.firstLower, 2, 'lower in pair 1, and the second failed in pair 4');
    assert.equal(d.firstHigher, 1, 'the first failed in pair 2');
    assert.equal(d.ties, 1);
    assert.equal(d.signTestP, signTest([-2, 1, -1]));
  });

  it('a system that fails every trial its rival passes loses every sign', () => {
    const d = pairedDifferences(Array.from({ length: 6 }, () => [FAILED, 14_000]));
    assert.equal(d.firstHigher, 6);
    assert.equal(d.signTestP, 0.0313);
    assert.equal(d.medianMs, null);
  });
});
