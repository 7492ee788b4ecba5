/**
 * The check rolling-update.test.ts makes of "one instance at a time", on its own: it must find two
 * instances out at once, and an instance that never came back, or the rollout test could not fail
 * when the rollout took two replicas down together.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { overlappingOutages } from './support/cluster-observers.js';

describe('overlappingOutages', () => {
  it('finds none when each instance is out only after the one before is ready again', () => {
    assert.deepEqual(
      overlappingOutages([
        { pod: 'r-1', from: 0, to: 5_000 },
        { pod: 'r-2', from: 5_000, to: 9_000 },
        { pod: 'p-0', from: 12_000, to: 15_000 },
      ]),
      [],
    );
  });

  it('finds two replicas out at once', () => {
    assert.deepEqual(
      overlappingOutages([
        { pod: 'r-1', from: 0, to: 5_000 },
        { pod: 'r-2', from: 300, to: 6_000 },
      ]),
      ['r-1 and r-2 were out at once (from 300)'],
    );
  });

  it('counts an instance never seen ready again as out to the end', () => {
    assert.deepEqual(
      overlappingOutages([
        { pod: 'r-1', from: 0, to: undefined },
        { pod: 'r-2', from: 60_000, to: 61_000 },
      ]),
      ['r-1 and r-2 were out at once (from 60000)'],
    );
  });
});
