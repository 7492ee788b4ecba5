import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentStateStore } from './state.js';

describe('AgentStateStore.recallServed', () => {
  it("takes over the served tokens of the last agent's report, so a restarted agent serves no order twice", () => {
    const state = new AgentStateStore();
    state.recallServed({ switchoverServed: 't1', restartServed: 'r1' });
    assert.equal(state.snapshot().decisions.switchoverServed, 't1');
    assert.equal(state.snapshot().decisions.restartServed, 'r1');
  });

  it('keeps what this agent served already, and recalls nothing from no report', () => {
    const state = new AgentStateStore();
    state.decide('switchoverServed', 't2');
    state.recallServed({ switchoverServed: 't1' });
    state.recallServed(undefined);
    assert.equal(state.snapshot().decisions.switchoverServed, 't2');
    assert.equal(state.snapshot().decisions.restartServed, undefined);
  });
});
