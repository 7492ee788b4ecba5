import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { demoNodes, requestedNodes } from './nodes.js';

describe('requestedNodes', () => {
  it('is auto unless KANRI_DEMO_NODES says real or process', () => {
    assert.equal(requestedNodes({}), 'auto');
    assert.equal(requestedNodes({ KANRI_DEMO_NODES: 'process' }), 'process');
    assert.equal(requestedNodes({ KANRI_DEMO_NODES: 'real' }), 'real');
  });

  it('names the variable and the values it takes when the value is wrong', () => {
    assert.throws(
      () => requestedNodes({ KANRI_DEMO_NODES: 'kind' }),
      /KANRI_DEMO_NODES must be real, process or auto, not "kind"/,
    );
  });
});

describe('demoNodes', () => {
  it('refuses real nodes where the machine cannot run them, saying why', async () => {
    const noRoot = async () => 'real nodes need root';
    await assert.rejects(
      demoNodes('x/postgres', () => {}, 'real', noRoot),
      /^Error: KANRI_DEMO_NODES=real, but real nodes need root$/,
    );
  });
});
