import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Condition, conditionTime, findCondition, setCondition } from './conditions.js';

const t0 = new Date('2026-01-02T03:04:05.678Z');
const t1 = new Date('2026-01-02T04:00:00.000Z');

describe('setCondition', () => {
  it('stamps a new condition with the time, without fractional seconds', () => {
    const [ready] = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Starting' }, t0);
    assert.deepEqual(ready, {
      type: 'Ready',
      status: 'False',
      reason: 'Starting',
      message: '',
      lastTransitionTime: '2026-01-02T03:04:05Z',
    });
    assert.equal(conditionTime(t0), '2026-01-02T03:04:05Z');
  });

  it('keeps lastTransitionTime while the status stays, even as reason, message and generation change', () => {
    const first = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Starting' }, t0);
    const later = setCondition(
      first,
      { type: 'Ready', status: 'False', reason: 'WaitingForReplicas', message: '1/3 ready', observedGeneration: 4 },
      t1,
    );
    assert.deepEqual(findCondition(later, 'Ready'), {
      type: 'Ready',
      status: 'False',
      reason: 'WaitingForReplicas',
      message: '1/3 ready',
      observedGeneration: 4,
      lastTransitionTime: '2026-01-02T03:04:05Z',
    });
  });

  it('moves lastTransitionTime when the status flips, and again when it flips back', () => {
    const first = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Starting' }, t0);
    const up = setCondition(first, { type: 'Ready', status: 'True', reason: 'Available' }, t1);
    assert.equal(findCondition(up, 'Ready')?.lastTransitionTime, '2026-01-02T04:00:00Z');
    const t2 = new Date('2026-01-02T05:00:00Z');
    const down = setCondition(up, { type: 'Ready', status: 'Unknown', reason: 'Lost' }, t2);
    assert.equal(findCondition(down, 'Ready')?.lastTransitionTime, '2026-01-02T05:00:00Z');
  });

  it('leaves the other conditions as they were and the input untouched', () => {
    const others: Condition[] = [
      {
        type: 'Degraded',
        status: 'False',
        reason: 'AsExpected',
        message: '',
        lastTransitionTime: '2025-12-31T00:00:00Z',
      },
    ];
    const frozen = structuredClone(others);
    const next = setCondition(others, { type: 'Ready', status: 'True', reason: 'Available' }, t0);
    assert.deepEqual(findCondition(next, 'Degraded'), frozen[0]);
    assert.equal(next.length, 2);
    assert.deepEqual(others, frozen, 'the given array is not changed');
  });
});
