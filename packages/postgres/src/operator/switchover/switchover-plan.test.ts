import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planSwitchover, type SwitchoverInput } from './switchover-plan.js';

const input = (over: Partial<SwitchoverInput> = {}): SwitchoverInput => ({
  request: '*',
  known: undefined,
  primary: 'a',
  replicas: ['b', 'c'],
  members: [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
  newToken: 't2',
  ...over,
});
const inProgress = { request: '*', from: 'a', token: 't1' } as const;

describe('planSwitchover', () => {
  it('orders a new request on the primary with a fresh token, and says so', () => {
    const step = planSwitchover(input());
    assert.deepEqual(step.status, { request: '*', from: 'a', token: 't2' });
    assert.deepEqual(step.order, { pod: 'a', value: 't2:*' });
    assert.deepEqual(step.events, [
      { type: 'Normal', reason: 'SwitchoverRequested', message: 'switchover from a to the best replica requested' },
    ]);
    assert.deepEqual(step.clearOrders, []);
    assert.equal(step.clearRequest, false);
  });

  it('warns about a named target that is no replica, and still orders it (the primary refuses it and says why)', () => {
    const step = planSwitchover(input({ request: 'nope' }));
    assert.equal(step.events[0]?.reason, 'SwitchoverTargetInvalid');
    assert.deepEqual(step.order, { pod: 'a', value: 't2:nope' });
  });

  it('waits for a primary before ordering anything', () => {
    const step = planSwitchover(input({ primary: undefined }));
    assert.equal(step.status, undefined);
    assert.equal(step.order, undefined);
    assert.deepEqual(step.events, []);
  });

  it('orders nothing more while the order stands unserved, and writes it again if the Pod lost it', () => {
    const standing = planSwitchover(
      input({ known: inProgress, members: [{ name: 'a', order: 't1:*' }, { name: 'b' }] }),
    );
    assert.deepEqual(standing, { status: inProgress, events: [], clearOrders: [], clearRequest: false });
    const lost = planSwitchover(input({ known: inProgress, members: [{ name: 'a' }, { name: 'b' }] }));
    assert.deepEqual(lost.order, { pod: 'a', value: 't1:*' });
    assert.deepEqual(lost.events, []);
  });

  it('completes once the primary changed: clears the order and the request, and forgets the token', () => {
    const step = planSwitchover(
      input({ known: inProgress, primary: 'b', members: [{ name: 'a', order: 't1:*', served: 't1' }, { name: 'b' }] }),
    );
    assert.equal(step.status, undefined);
    assert.equal(step.order, undefined, 'the new primary gets no order');
    assert.deepEqual(step.clearOrders, ['a']);
    assert.equal(step.clearRequest, true);
    assert.deepEqual(step.events, [
      { type: 'Normal', reason: 'SwitchoverCompleted', message: 'switchover done: a → b' },
    ]);
  });

  it('ends a request the primary echoed while it still is the primary (refused or failed), with no Event of its own', () => {
    const step = planSwitchover(input({ known: inProgress, members: [{ name: 'a', order: 't1:*', served: 't1' }] }));
    assert.deepEqual(step, { status: undefined, events: [], clearOrders: ['a'], clearRequest: true });
  });

  it('waits mid-handover, even with the token echoed: the outcome is not known yet', () => {
    const step = planSwitchover(
      input({ known: inProgress, primary: undefined, members: [{ name: 'a', order: 't1:*', served: 't1' }] }),
    );
    assert.deepEqual(step, { status: inProgress, events: [], clearOrders: [], clearRequest: false });
  });

  it('takes an echo of an older token for no answer', () => {
    const step = planSwitchover(input({ known: inProgress, members: [{ name: 'a', order: 't1:*', served: 't0' }] }));
    assert.equal(step.clearRequest, false);
    assert.deepEqual(step.status, inProgress);
  });

  it('the same value set again after it was cleared is a new request with a new token', () => {
    // The last request ended: status and annotation cleared together, the order removed.
    const step = planSwitchover(input({ primary: 'b', members: [{ name: 'a', served: 't1' }, { name: 'b' }] }));
    assert.deepEqual(step.order, { pod: 'b', value: 't2:*' });
    assert.deepEqual(step.status, { request: '*', from: 'b', token: 't2' });
  });

  it('a changed value replaces the request in progress, and its order', () => {
    const step = planSwitchover(input({ request: 'c', known: inProgress, members: [{ name: 'a', order: 't1:*' }] }));
    assert.deepEqual(step.order, { pod: 'a', value: 't2:c' });
    assert.deepEqual(step.clearOrders, [], 'overwritten, not removed first');
  });

  it('clears every order once nobody asks (withdrawn), and any order off the primary that carries the request', () => {
    const withdrawn = planSwitchover(
      input({ request: undefined, known: inProgress, members: [{ name: 'a', order: 't1:*' }, { name: 'b' }] }),
    );
    assert.deepEqual(withdrawn, { status: undefined, events: [], clearOrders: ['a'], clearRequest: false });
    const stray = planSwitchover(
      input({
        known: inProgress,
        members: [
          { name: 'a', order: 't1:*' },
          { name: 'b', order: 't0:*' },
        ],
      }),
    );
    assert.deepEqual(stray.clearOrders, ['b']);
  });

  it('takes the order on a Pod for the request in progress when the status lost it', () => {
    // The order was written, the status write after it was not: the primary has switched over since.
    const members = [{ name: 'a', order: 't1:*', served: 't1' }, { name: 'b' }];
    const step = planSwitchover(input({ primary: 'b', members }));
    assert.equal(step.order, undefined, 'no second switchover');
    assert.equal(step.clearRequest, true);
    assert.equal(step.events[0]?.reason, 'SwitchoverCompleted');
  });

  it('starts afresh from a status written before orders existed (no token)', () => {
    const step = planSwitchover(input({ known: { request: '*', from: 'a' } }));
    assert.deepEqual(step.order, { pod: 'a', value: 't2:*' });
  });
});
