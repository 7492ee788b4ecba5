import assert from 'node:assert/strict';
import { it } from 'node:test';
import { STREAM_LASTED_MS, WAL_REMOVED_ATTEMPTS, WAL_REMOVED_SPAN_MS, WalRemovedWatch } from './wal-removed-watch.js';

const refused =
  'FATAL:  could not receive data from WAL stream: ERROR:  requested WAL segment 000000010000000000000003 has already been removed';
const streaming = 'LOG:  started streaming WAL from primary at 0/3000000 on timeline 1';

/** One attempt as postgres logs it: the stream starts, and the primary refuses it a few ms later. */
const attempt = (watch: WalRemovedWatch, atMs: number) => {
  watch.see(streaming, atMs);
  return watch.see(refused, atMs + 3);
};

it('removed WAL: refused attempts re-clone once there were enough of them over enough time', () => {
  const watch = new WalRemovedWatch();
  assert.equal(attempt(watch, 0), true, 'the first refusal asks for a quick retry');
  for (let i = 1; i < WAL_REMOVED_ATTEMPTS; i++) assert.equal(attempt(watch, i * 1_000), false);
  // Enough refusals, too quickly: a promotion slowed down by load refuses every attempt for a while.
  assert.equal(watch.confirmed, undefined);
  attempt(watch, WAL_REMOVED_SPAN_MS);
  assert.equal(watch.confirmed, refused);
  watch.reset();
  assert.equal(watch.confirmed, undefined);
  assert.equal(attempt(watch, 20_000), true);
});

it('removed WAL: a stream that lasted between refusals starts the count again', () => {
  const watch = new WalRemovedWatch();
  // A promotion's .partial rename: refused once, then the next attempt streams on.
  attempt(watch, 0);
  watch.see(streaming, 100);
  // Much later the slot is lost: this run counts from its own first refusal.
  const later = 100 + STREAM_LASTED_MS + 60_000;
  assert.equal(watch.see(refused, later), true);
  attempt(watch, later + 1_000);
  attempt(watch, later + WAL_REMOVED_SPAN_MS - 10);
  assert.equal(watch.confirmed, undefined, 'three refusals, but the span is short of the minimum');
  attempt(watch, later + WAL_REMOVED_SPAN_MS);
  assert.equal(watch.confirmed, refused);
});

it('removed WAL: other lines neither count nor reset', () => {
  const watch = new WalRemovedWatch();
  watch.see(refused, 0);
  watch.see('LOG:  waiting for WAL to become available at 0/3000000', 1_000);
  watch.see(refused, 2_000);
  watch.see(refused, WAL_REMOVED_SPAN_MS);
  assert.equal(watch.confirmed, refused);
});
