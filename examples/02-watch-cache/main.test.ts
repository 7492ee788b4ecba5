import assert from 'node:assert/strict';
import { it } from 'node:test';
import { main } from './main.js';

it('example 02 sees its own writes at once and every change through the watch', async () => {
  const seen = await main();
  assert.ok(seen.includes('cached with palette=rgb: 3'), seen.join('\n'));
  assert.ok(seen.includes('after delete: 2'), seen.join('\n'));
  for (const name of ['red', 'green', 'blue']) assert.ok(seen.includes(`added ${name}`), `added ${name}`);
  assert.ok(seen.includes('deleted green'));
});
