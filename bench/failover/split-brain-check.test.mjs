// The split-brain watcher's verdicts: two primaries at once, and where it could not have seen them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blindSpans, violations } from './split-brain-check.mjs';

describe('split-brain check', () => {
  it('finds overlapping and alternating writes, once per second and pair', () => {
    const found = violations([
      { instance: 'a', start: 0, end: 10 },
      { instance: 'b', start: 5, end: 12 },
      { instance: 'b', start: 6, end: 13 },
      { instance: 'a', start: 2_000, end: 2_010 },
      { instance: 'b', start: 2_100, end: 2_110 },
      { instance: 'a', start: 2_200, end: 2_210 },
    ]);
    assert.deepEqual(found, [
      { at: 5, instances: ['a', 'b'], kind: 'overlapping writes' },
      { at: 2_100, instances: ['a', 'b'], kind: 'alternating writes within 1 s' },
    ]);
    assert.deepEqual(
      violations([
        { instance: 'a', start: 0, end: 10 },
        { instance: 'b', start: 5_000, end: 5_010 },
      ]),
      [],
    );
  });

  it('reports a span without a probe longer than 10 s, and none for a loop that kept probing', () => {
    const attempts = new Map([
      ['m1', { since: 0, times: [0, 3_000, 6_000, 9_000, 12_000, 15_000] }],
      ['m2', { since: 0, times: [0, 1_000, 14_000, 15_000] }],
    ]);
    assert.deepEqual(blindSpans(attempts, { from: 0, to: 16_000 }), [{ instance: 'm2', fromMs: 1_000, ms: 13_000 }]);
  });

  it('counts the silence up to the end of the window, and before its start', () => {
    const attempts = new Map([['m1', { since: 0, times: [0, 1_000] }]]);
    assert.deepEqual(blindSpans(attempts, { from: 500, to: 20_000 }), [{ instance: 'm1', fromMs: 1_000, ms: 19_000 }]);
    // A loop silent since before the window is blind from its last probe.
    const silent = new Map([['m1', { since: 0, times: [0] }]]);
    assert.deepEqual(blindSpans(silent, { from: 5_000, to: 12_000 }), [{ instance: 'm1', fromMs: 0, ms: 12_000 }]);
  });

  it('judges an instance learnt of during the window from then on', () => {
    const attempts = new Map([['m4', { since: 10_000, times: [10_000, 12_000] }]]);
    assert.deepEqual(blindSpans(attempts, { from: 0, to: 15_000 }), []);
    assert.deepEqual(blindSpans(new Map([['m4', { since: 20_000, times: [20_000] }]]), { from: 0, to: 15_000 }), []);
  });
});
