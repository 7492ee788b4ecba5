import assert from 'node:assert/strict';
import { it } from 'node:test';
import { realNodesUnsupportedReason } from '@kanri/testenv';
import { main } from './main.js';

it('example 04 serves a real image through a Service on a real node', {
  skip: await realNodesUnsupportedReason(),
}, async () => {
  const { answer, pods } = await main();
  const reply = JSON.parse(answer) as { hostname: string };
  assert.match(reply.hostname, /^echo-/);
  assert.match(
    pods,
    new RegExp(`^${reply.hostname}\\s+1/1\\s+Running`, 'm'),
    'the Pod that answered is Running and Ready',
  );
  assert.match(pods, /real-node-0/);
});
