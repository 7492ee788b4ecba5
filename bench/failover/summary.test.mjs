// bench:failover's summary: figures from successful trials only, ratios whatever the run's
// status, and a failed trial that counts against the system that failed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAILED } from '../../scripts/bench-stats.mjs';
import { compareSystems, pairsByTrial, summarizeTrials, systemStatus } from './summary.mjs';

const ok = (trial, ms, lost = 0) => ({
  trial,
  ok: true,
  writableMs: ms,
  rtoMs: ms + 100,
  clientSearchMs: 100,
  acked: 1_000,
  lost,
});
// A trial that failed after some figures were taken: none of them may count.
const failed = (trial) => ({
  trial,
  ok: false,
  error: 'no surviving member took a write',
  writableMs: 1,
  acked: 50,
  lost: 7,
});

describe('bench:failover summary', () => {
  it('takes every figure, lost commits included, from successful trials only', () => {
    const s = summarizeTrials([ok(1, 14_000), failed(2), ok(3, 15_000, 1)]);
    assert.equal(s.okTrials, 2);
    assert.equal(s.failedTrials, 1);
    assert.equal(s.writableMsMedian, 14_500);
    assert.equal(s.writableMsMin, 14_000);
    assert.equal(s.commitsAcked, 2_000);
    assert.equal(s.commitsLost, 1);
    assert.equal(s.trialsWithLoss, 1);
    assert.equal(systemStatus(s, 3), 'failed');
  });

  it('pairs trials by number: a figure, FAILED, or nothing for a trial that did not run', () => {
    const pairs = pairsByTrial(
      [ok(1, 14_000), failed(2)],
      [ok(1, 15_000), ok(2, 15_500), ok(3, 16_000)],
      3,
      'writableMs',
    );
    assert.deepEqual(pairs, [
      [14_000, 15_000],
      [FAILED, 15_500],
      [undefined, 16_000],
    ]);
  });

  it("counts Kanri's failed trial against Kanri, and still gives the ratios of the successful trials", () => {
    const results = {
      kanri: [ok(1, 14_000), failed(2), ok(3, 14_200)],
      patroni: [ok(1, 15_000), ok(2, 13_000), ok(3, 15_200)],
    };
    const report = Object.fromEntries(
      Object.entries(results).map(([name, r]) => [name, { ...summarizeTrials(r), results: r }]),
    );
    const { paired, ratios, why } = compareSystems(report, 3);
    assert.equal(paired.writableMs.firstLower, 2);
    assert.equal(paired.writableMs.firstHigher, 1, 'trial 2 counts against Kanri, whose trial failed');
    assert.equal(paired.writableMs.firstFailed, 1);
    assert.equal(paired.writableMs.pairs, 2);
    assert.equal(paired.writableMs.medianMs, -1_000);
    assert.equal(ratios.writableKanriOverPatroni, 0.94, 'medians 14,100 / 15,000 of the successful trials');
    assert.equal(why, null);
  });

  it('says why a ratio is missing when a system has no successful trial', () => {
    const report = {
      kanri: { ...summarizeTrials([failed(1)]), results: [failed(1)] },
      patroni: { ...summarizeTrials([ok(1, 15_000)]), results: [ok(1, 15_000)] },
    };
    const { paired, ratios, why } = compareSystems(report, 1);
    assert.equal(ratios.rtoKanriOverPatroni, null);
    assert.equal(why, 'no successful trial of kanri');
    assert.equal(paired.rtoMs.firstHigher, 1);
  });
});
