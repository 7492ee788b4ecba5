import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRestart, type RestartMember } from './restart-plan.js';

const shared = [{ name: 'shared_buffers', running: '2048', wanted: '32MB' }];
const fewer = [{ name: 'max_connections', running: '100', wanted: '40' }];
const more = [{ name: 'max_connections', running: '40', wanted: '100' }];
const m = (name: string, over: Partial<RestartMember> = {}): RestartMember => ({
  name,
  primary: false,
  ready: true,
  ...over,
});

describe('planRestart', () => {
  it('is idle with nothing pending', () => {
    assert.deepEqual(planRestart([m('a', { primary: true }), m('b')]), { kind: 'idle' });
  });

  it('restarts replicas first, one at a time, then the primary', () => {
    const first = planRestart([
      m('a', { primary: true, pendingRestart: shared }),
      m('b', { pendingRestart: shared }),
      m('c', { pendingRestart: shared }),
    ]);
    assert.equal(first.kind === 'restart' && first.pod, 'b');
    const busy = planRestart([
      m('a', { primary: true, pendingRestart: shared }),
      m('b', { pendingRestart: shared, requested: 't1' }),
      m('c', { pendingRestart: shared }),
    ]);
    assert.deepEqual(busy, { kind: 'wait', current: 'b', message: 'waiting for b to restart' });
    const last = planRestart([m('a', { primary: true, pendingRestart: shared }), m('b'), m('c')]);
    assert.equal(last.kind === 'restart' && last.pod, 'a');
  });

  it('an increase of a hot-standby limit keeps replicas first', () => {
    const step = planRestart([m('a', { primary: true, pendingRestart: more }), m('b', { pendingRestart: more })]);
    assert.equal(step.kind === 'restart' && step.pod, 'b');
  });

  it('a decrease restarts the primary first, then each replica once its control data shows the new value', () => {
    const first = planRestart([m('a', { primary: true, pendingRestart: fewer }), m('b', { pendingRestart: fewer })]);
    assert.equal(first.kind === 'restart' && first.pod, 'a');
    assert.match(first.kind === 'restart' ? first.message : '', /primary first/);
    const notReplayed = planRestart([
      m('a', { primary: true }),
      m('b', { pendingRestart: fewer, controlLimits: { max_connections: 100 } }),
    ]);
    assert.equal(notReplayed.kind, 'wait');
    assert.match(notReplayed.kind === 'wait' ? notReplayed.message : '', /replay the primary's new max_connections/);
    const replayed = planRestart([
      m('a', { primary: true }),
      m('b', { pendingRestart: fewer, controlLimits: { max_connections: 40 } }),
    ]);
    assert.equal(replayed.kind === 'restart' && replayed.pod, 'b');
  });

  it('orders nothing while a ready instance has not loaded the configuration yet', () => {
    const step = planRestart(
      [m('a', { primary: true, pendingRestart: shared, configHash: 'new' }), m('b', { configHash: 'old' })],
      'new',
    );
    assert.deepEqual(step, { kind: 'wait', current: 'b', message: 'waiting for b to load the new configuration' });
    const loaded = planRestart(
      [
        m('a', { primary: true, pendingRestart: shared, configHash: 'new' }),
        m('b', { configHash: 'new', pendingRestart: shared }),
      ],
      'new',
    );
    assert.equal(loaded.kind === 'restart' && loaded.pod, 'b');
  });

  it('leaves instances that are not ready alone', () => {
    assert.deepEqual(planRestart([m('a', { primary: true }), m('b', { ready: false, pendingRestart: shared })]), {
      kind: 'idle',
    });
  });
});
