import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ClaimView, planVolumeResize } from './volume-resize-plan.js';

const MI = 2 ** 20;
const claim = (instance: string, change: Partial<ClaimView> = {}): ClaimView => ({
  instance,
  claim: `${instance}-pgdata`,
  isPrimary: false,
  bound: true,
  requested: '1Gi',
  capacity: '1Gi',
  resizeStatus: undefined,
  conditions: [],
  grownFromSize: undefined,
  wanted: '1Gi',
  autoGrow: undefined,
  volume: { sizeBytes: 1000 * MI, availableBytes: 900 * MI },
  ...change,
});

describe('planVolumeResize', () => {
  it('does nothing, and sets no condition, while every claim has its size', () => {
    assert.deepEqual(planVolumeResize([claim('db-a-0'), claim('db-a-1', { isPrimary: true })], undefined), {
      waiting: false,
    });
  });

  it('raises one claim at a time to the spec, replicas before the primary', () => {
    const views = [
      claim('db-a-0', { isPrimary: true, wanted: '2Gi' }),
      claim('db-a-2', { wanted: '2Gi' }),
      claim('db-a-1', { wanted: '2Gi' }),
    ];
    const plan = planVolumeResize(views, undefined);
    assert.deepEqual(plan.step, { instance: 'db-a-1', claim: 'db-a-1-pgdata', from: '1Gi', to: '2Gi', why: 'spec' });
    assert.equal(plan.condition?.status, 'True');
    assert.equal(plan.condition?.reason, 'Resizing');
    assert.equal(plan.waiting, true);
    // The first is asked for and not done yet: nothing else starts.
    const underWay = planVolumeResize(
      [views[0] as ClaimView, views[1] as ClaimView, claim('db-a-1', { wanted: '2Gi', requested: '2Gi' })],
      plan.condition,
    );
    assert.equal(underWay.step, undefined);
    assert.match(underWay.condition?.message ?? '', /db-a-1-pgdata: 1Gi → 2Gi \(waiting for the provisioner\)/);
    // Done (capacity reached, no resize status): the next replica, the primary last.
    const next = planVolumeResize(
      [
        views[0] as ClaimView,
        views[1] as ClaimView,
        claim('db-a-1', { wanted: '2Gi', requested: '2Gi', capacity: '2Gi' }),
      ],
      plan.condition,
    );
    assert.equal(next.step?.instance, 'db-a-2');
    const last = planVolumeResize(
      [
        views[0] as ClaimView,
        claim('db-a-2', { wanted: '2Gi', requested: '2Gi', capacity: '2Gi' }),
        claim('db-a-1', { wanted: '2Gi', requested: '2Gi', capacity: '2Gi' }),
      ],
      plan.condition,
    );
    assert.equal(last.step?.instance, 'db-a-0');
  });

  it('waits on a resize status or a pending filesystem, and names why', () => {
    const pending = planVolumeResize(
      [claim('db-a-0', { requested: '2Gi', capacity: '2Gi', conditions: [{ type: 'FileSystemResizePending' }] })],
      undefined,
    );
    assert.match(pending.condition?.message ?? '', /FileSystemResizePending/);
    const node = planVolumeResize(
      [claim('db-a-0', { requested: '2Gi', capacity: '1Gi', resizeStatus: 'NodeResizeInProgress' })],
      undefined,
    );
    assert.match(node.condition?.message ?? '', /NodeResizeInProgress/);
  });

  it('holds on a failed resize, saying what Kubernetes said', () => {
    const plan = planVolumeResize(
      [
        claim('db-a-0', {
          requested: '2Gi',
          conditions: [{ type: 'ControllerResizeError', message: 'resize2fs failed' }],
        }),
        claim('db-a-1', { wanted: '2Gi' }),
      ],
      undefined,
    );
    assert.equal(plan.step, undefined);
    assert.equal(plan.condition?.reason, 'ResizeFailed');
    assert.match(plan.condition?.message ?? '', /db-a-0-pgdata: resize2fs failed/);
  });

  it('never shrinks: a claim larger than the spec stays', () => {
    assert.equal(planVolumeResize([claim('db-a-0', { requested: '4Gi', capacity: '4Gi' })], undefined).step, undefined);
  });

  it('says once that every volume is done, after a resize', () => {
    const plan = planVolumeResize([claim('db-a-0')], { status: 'True' });
    assert.deepEqual(plan.condition, {
      status: 'False',
      reason: 'Resized',
      message: 'every data volume has the size asked of it',
    });
  });

  describe('auto-grow', () => {
    const autoGrow = { limit: '3Gi', trigger: 75 };
    const full = (percent: number) => ({ sizeBytes: 1000 * MI, availableBytes: ((100 - percent) / 100) * 1000 * MI });

    it('adds half the size at the trigger, in Mi, never past the limit', () => {
      assert.equal(planVolumeResize([claim('db-a-0', { autoGrow, volume: full(74) })], undefined).step, undefined);
      const step = planVolumeResize([claim('db-a-0', { autoGrow, volume: full(80) })], undefined).step;
      assert.equal(step?.to, '1536Mi');
      assert.equal(step?.grownFromSize, 1000 * MI);
      assert.match(step?.why ?? '', /autoGrow: 80% of 1000Mi used \(trigger 75%, limit 3Gi\)/);
      const nearLimit = planVolumeResize(
        [claim('db-a-0', { autoGrow, requested: '2560Mi', capacity: '2560Mi', volume: full(90) })],
        undefined,
      ).step;
      assert.equal(nearLimit?.to, '3072Mi');
      const atLimit = planVolumeResize(
        [claim('db-a-0', { autoGrow, requested: '3Gi', capacity: '3Gi', volume: full(99) })],
        undefined,
      );
      assert.equal(atLimit.step, undefined);
    });

    it('caps a step at maxGrow', () => {
      const step = planVolumeResize(
        [claim('db-a-0', { autoGrow: { ...autoGrow, maxGrow: '100Mi' }, volume: full(80) })],
        undefined,
      ).step;
      assert.equal(step?.to, '1124Mi');
    });

    it('does not grow again until the filesystem has grown from the size it last grew from', () => {
      const same = planVolumeResize(
        [
          claim('db-a-0', {
            autoGrow,
            requested: '1536Mi',
            capacity: '1536Mi',
            grownFromSize: 1000 * MI,
            volume: full(80),
          }),
        ],
        undefined,
      );
      assert.equal(same.step, undefined);
      const grown = planVolumeResize(
        [
          claim('db-a-0', {
            autoGrow,
            requested: '1536Mi',
            capacity: '1536Mi',
            grownFromSize: 900 * MI,
            volume: full(80),
          }),
        ],
        undefined,
      );
      assert.equal(grown.step?.to, '2304Mi');
    });

    it('does nothing without a report of the volume, or on an unbound claim', () => {
      assert.equal(planVolumeResize([claim('db-a-0', { autoGrow, volume: undefined })], undefined).step, undefined);
      assert.equal(
        planVolumeResize([claim('db-a-0', { autoGrow, volume: full(90), bound: false })], undefined).step,
        undefined,
      );
    });
  });
});
