import assert from 'node:assert/strict';
import { it } from 'node:test';
import { WAL_REMOVED_ATTEMPTS, WAL_REMOVED_SPAN_MS, WalRemovedWatch } from './wal-removed-watch.js';

const refused =
  'FATAL:  could not receive data from WAL stream: ERROR:  requested WAL segment 000000010000000000000003 has already been removed';
const streaming = 'LOG:  started streaming WAL from primary at 0/3000000 on timeline 2';

it('removed WAL: a re-clone needs repeated refusals over time, and a stream in between starts the count again', () => {
  const watch = new WalRemovedWatch();
  assert.equal(watch.see(refused, 0), true, 'the first refusal asks for a quick retry');
  assert.equal(watch.see(refused, 100), false);
  assert.equal(watch.confirmed, undefined);
  // A promotion's .partial rename: refused, then streaming resumes. Nothing is re-cloned.
  assert.equal(watch.see(streaming, 200), false);
  for (let i = 0; i < WAL_REMOVED_ATTEMPTS; i++) assert.equal(watch.see(refused, 1_100 + i * 100), i === 0);
  // Enough refusals, too quickly: a promotion slowed down by load refuses every attempt for a while.
  assert.equal(watch.confirmed, undefined);
  assert.equal(watch.see(refused, 1_100 + WAL_REMOVED_SPAN_MS), false);
  assert.equal(watch.confirmed, refused);
  // Streaming after all: the WAL is there, and nothing is re-cloned.
  watch.see(streaming, 10_000);
  assert.equal(watch.confirmed, undefined);
  for (const at of [11_000, 12_000, 16_000]) watch.see(refused, at);
  assert.equal(watch.confirmed, refused);
  watch.reset();
  assert.equal(watch.confirmed, undefined);
  assert.equal(watch.see(refused, 20_000), true);
});

it('removed WAL: other lines neither count nor reset', () => {
  const watch = new WalRemovedWatch();
  watch.see(refused, 0);
  watch.see('LOG:  waiting for WAL to become available at 0/3000000', 1_000);
  watch.see(refused, 2_000);
  watch.see(refused, WAL_REMOVED_SPAN_MS);
  assert.equal(watch.confirmed, refused);
});
