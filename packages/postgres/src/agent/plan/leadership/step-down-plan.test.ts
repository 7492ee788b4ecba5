import assert from 'node:assert/strict';
import { it } from 'node:test';
import { planStepDown, STEP_DOWN_AFTER_MS, type StepDownInput, stepDownDue } from './step-down-plan.js';

const FULL = 'the data volume is full: 0.1 MiB free of 128.0 MiB';
const input = (extra: Partial<StepDownInput> = {}): StepDownInput => ({
  downForMs: STEP_DOWN_AFTER_MS,
  fullForMs: STEP_DOWN_AFTER_MS,
  diskFull: FULL,
  others: [{ name: 'db-b-0', candidate: true }],
  ...extra,
});

it('step down: a primary whose postgres cannot run on a full volume releases the Lease for a candidate with room', () => {
  assert.deepEqual(planStepDown(input()), {
    action: 'release',
    why: `postgres has not run for 10 s (${FULL}); db-b-0 can take over`,
  });
  const two = planStepDown(
    input({
      others: [
        { name: 'db-b-0', candidate: true },
        { name: 'db-c-0', candidate: false },
      ],
    }),
  );
  assert.equal(two.action === 'release' && two.why.endsWith('; db-b-0 can take over'), true);
});

it('step down: a primary whose postgres runs on a full volume switches over to the candidates with room', () => {
  const others = [
    { name: 'db-b-0', candidate: true },
    { name: 'db-c-0', candidate: true, diskFull: FULL },
  ];
  assert.deepEqual(planStepDown(input({ downForMs: 0, others })), {
    action: 'switch-over',
    to: ['db-b-0'],
    why: `postgres runs on a volume full for 10 s (${FULL}); db-b-0 can take over`,
  });
});

it('step down: not before the limit, not without a full volume, not without a replica that can take over', () => {
  assert.deepEqual(planStepDown(input({ downForMs: STEP_DOWN_AFTER_MS - 1 })), { action: 'stay' });
  assert.deepEqual(planStepDown(input({ downForMs: 0, fullForMs: STEP_DOWN_AFTER_MS - 1 })), { action: 'stay' });
  assert.deepEqual(planStepDown(input({ diskFull: undefined })), { action: 'stay' });
  assert.equal(stepDownDue(input({ diskFull: undefined })), false);
  assert.equal(stepDownDue(input({ downForMs: 0, fullForMs: 0 })), false);
  for (const others of [
    [],
    [{ name: 'db-b-0', candidate: false }],
    [{ name: 'db-b-0', candidate: true, diskFull: FULL }],
  ]) {
    for (const downForMs of [0, STEP_DOWN_AFTER_MS]) {
      const decision = planStepDown(input({ downForMs, others }));
      assert.equal(decision.action, 'stay');
      assert.match(
        decision.action === 'stay' ? (decision.waiting ?? '') : '',
        /; no replica with room can take over$/,
        JSON.stringify(others),
      );
    }
  }
});
