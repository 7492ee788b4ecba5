import assert from 'node:assert/strict';
import { it } from 'node:test';
import { planStepDown, STEP_DOWN_AFTER_MS, type StepDownInput } from './step-down-plan.js';

const FULL = 'the data volume is full: 0.1 MiB free of 128.0 MiB';
const input = (extra: Partial<StepDownInput> = {}): StepDownInput => ({
  downForMs: STEP_DOWN_AFTER_MS,
  diskFull: FULL,
  others: [{ name: 'db-b-0', candidate: true }],
  ...extra,
});

it('step down: a primary whose postgres cannot run on a full volume hands over to a candidate with room', () => {
  assert.deepEqual(planStepDown(input()), {
    stepDown: true,
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
  assert.equal(two.stepDown && two.why.endsWith('; db-b-0 can take over'), true);
});

it('step down: not before the limit, not without a full volume, not without a replica that can take over', () => {
  assert.deepEqual(planStepDown(input({ downForMs: STEP_DOWN_AFTER_MS - 1 })), { stepDown: false });
  assert.deepEqual(planStepDown(input({ diskFull: undefined })), { stepDown: false });
  for (const others of [
    [],
    [{ name: 'db-b-0', candidate: false }],
    [{ name: 'db-b-0', candidate: true, diskFull: FULL }],
  ]) {
    const decision = planStepDown(input({ others }));
    assert.equal(decision.stepDown, false);
    assert.match(
      decision.stepDown ? '' : (decision.waiting ?? ''),
      /^postgres has not run for 10 s \(the data volume is full: .*\); no replica with room can take over$/,
      JSON.stringify(others),
    );
  }
});
