import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setCondition } from '@kanri/runtime';
import { type Condition, conditionSchema } from './condition.js';

it('admits metav1.Condition and refuses a status other than True, False or Unknown', () => {
  const ready = {
    type: 'Ready',
    status: 'True',
    reason: 'Up',
    message: '',
    lastTransitionTime: '2026-12-06T10:00:00Z',
  };
  assert.ok(conditionSchema.safeParse(ready).success);
  assert.ok(conditionSchema.safeParse({ ...ready, observedGeneration: 3 }).success);
  assert.equal(conditionSchema.safeParse({ ...ready, status: 'Yes' }).success, false);
  assert.equal(conditionSchema.safeParse({ ...ready, reason: undefined }).success, false);
});

it("takes setCondition's result without a cast", () => {
  const before: Condition[] = [];
  const after: Condition[] = setCondition(before, { type: 'Ready', status: 'False', reason: 'Down' });
  assert.equal(after[0]?.status, 'False');
  assert.ok(conditionSchema.array().safeParse(after).success);
});
