import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planPgoTrigger } from './pgo-trigger-plan.js';

describe('planPgoTrigger', () => {
  it('serves a new trigger value once, to the target or the best replica', () => {
    assert.deepEqual(planPgoTrigger({ enabled: true, trigger: 'a' }), { request: '*', served: 'a' });
    assert.deepEqual(planPgoTrigger({ enabled: true, trigger: 'b', served: 'a', targetInstance: 'db-i-2' }), {
      request: 'db-i-2',
      served: 'b',
    });
    assert.equal(planPgoTrigger({ enabled: true, trigger: 'a', served: 'a' }), undefined);
  });

  it('does nothing while switchovers are not enabled, without a trigger, or while another switchover stands', () => {
    assert.equal(planPgoTrigger({ enabled: false, trigger: 'a' }), undefined);
    assert.equal(planPgoTrigger({ enabled: true }), undefined);
    assert.equal(planPgoTrigger({ enabled: true, trigger: 'a', pending: '*' }), undefined);
  });
});
