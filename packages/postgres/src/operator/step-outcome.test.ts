import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresClusterStatus } from '../api/postgres-cluster.js';
import {
  applyConditions,
  combineOutcomes,
  reconcileResult,
  removeCondition,
  type StepOutcome,
  withOutcome,
} from './step-outcome.js';

const t0 = new Date('2026-12-01T10:00:00Z');
const t1 = new Date('2026-12-01T11:00:00Z');
const condition = (type: string, status: 'True' | 'False', reason = 'Why') => ({ type, status, reason, message: '' });

describe('combineOutcomes', () => {
  it('asks for the earliest requeue any step asked for, and none when none did', () => {
    const combined = combineOutcomes({ requeueAfterMs: 30_000 }, {}, { requeueAfterMs: 2_000 }, { requeueAfterMs: 0 });
    assert.equal(combined.requeueAfterMs, 0);
    assert.equal(combineOutcomes({}, { status: { lastPrimary: 'a' } }).requeueAfterMs, undefined);
    assert.deepEqual(combineOutcomes(), {});
  });

  it('keeps the condition changes in the order the steps made them, the last per type where it came', () => {
    const combined = combineOutcomes(
      { conditions: [condition('A', 'True'), condition('B', 'True')] },
      { conditions: [condition('A', 'False'), removeCondition('C')] },
      { conditions: [condition('D', 'True')] },
    );
    assert.deepEqual(
      combined.conditions?.map((c) => ('remove' in c ? `-${c.type}` : `${c.type}=${c.status}`)),
      ['B=True', 'A=False', '-C', 'D=True'],
    );
  });

  it("lets a later step's status field replace an earlier one's, and merges pgbackrest one level", () => {
    const combined = combineOutcomes(
      { status: { pgbackrest: { restore: { id: 'r1', finished: false, phase: 'Restoring' } }, lastPrimary: 'a' } },
      { status: { pgbackrest: { repos: [{ name: 'repo1', stanzaCreated: true }] }, lastPrimary: 'b' } },
      { status: { pgbackrest: { repoPaths: { repo1: '/p' } } } },
    );
    assert.deepEqual(combined.status, {
      pgbackrest: {
        restore: { id: 'r1', finished: false, phase: 'Restoring' },
        repos: [{ name: 'repo1', stanzaCreated: true }],
        repoPaths: { repo1: '/p' },
      },
      lastPrimary: 'b',
    });
  });

  it('halts with the first step that halted', () => {
    assert.equal(combineOutcomes({}, { halt: 'paused' }, { halt: 'later' }).halt, 'paused');
    assert.equal(combineOutcomes({}, {}).halt, undefined);
  });
});

describe('applyConditions', () => {
  it('sets and removes in order, moving the transition time only when the status flips', () => {
    const before = applyConditions([], [condition('Ready', 'False'), condition('Gone', 'True')], t0);
    const after = applyConditions(before, [condition('Ready', 'False', 'Other'), removeCondition('Gone')], t1);
    assert.deepEqual(
      after.map((c) => [c.type, c.reason, c.lastTransitionTime]),
      [['Ready', 'Other', '2026-12-01T10:00:00Z']],
    );
    const flipped = applyConditions(after, [condition('Ready', 'True')], t1);
    assert.equal(flipped[0]?.lastTransitionTime, '2026-12-01T11:00:00Z');
  });
});

describe('withOutcome', () => {
  it('lays the status fields and condition changes over the observed status', () => {
    const observed: PostgresClusterStatus = {
      primary: 'db-1',
      systemIdentifier: '1',
      conditions: applyConditions([], [condition('Ready', 'True'), condition('WALArchiving', 'True')], t0),
    };
    const outcome: StepOutcome = combineOutcomes(
      { status: { systemIdentifier: '2' } },
      { conditions: [removeCondition('WALArchiving'), condition('RolloutHalted', 'False')] },
    );
    const status = withOutcome(observed, outcome);
    assert.equal(status.primary, 'db-1');
    assert.equal(status.systemIdentifier, '2');
    assert.deepEqual(
      status.conditions?.map((c) => c.type),
      ['Ready', 'RolloutHalted'],
    );
  });
});

describe('reconcileResult', () => {
  it('requeues after the outcome asked for, and not at all when it asked for nothing', () => {
    assert.deepEqual(reconcileResult({ requeueAfterMs: 2_000 }), { requeueAfter: 2_000 });
    assert.equal(reconcileResult({ halt: 'paused' }), undefined);
  });
});
