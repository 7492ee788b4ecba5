import assert from 'node:assert/strict';
import { it } from 'node:test';
import { main } from './main.js';

it('example 01 creates a namespace on a real API server', async () => {
  const output = await main();
  assert.match(output, /^hello-kanri\s+Active/m);
  assert.match(output, /^kube-system\s+Active/m);
});
