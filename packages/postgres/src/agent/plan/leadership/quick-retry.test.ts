import assert from 'node:assert/strict';
import { it } from 'node:test';
import { QUICK_RETRIES, QUICK_RETRY_WINDOW_MS, QuickRetry } from './quick-retry.js';

const slotMissing =
  '2026-12-03 07:03:57.273 UTC [23002] FATAL:  could not start WAL streaming: ERROR:  replication slot "kanri_bench_i_2" does not exist';
const other = '2026-12-03 07:03:57.274 UTC [21580] LOG:  new target timeline is 4';

it('quick retry: a missing slot or a first removed-WAL refusal asks for one, other lines do not', () => {
  const retry = new QuickRetry();
  assert.equal(retry.wanted(other, false, 0), false);
  assert.equal(retry.wanted(slotMissing, false, 0), true);
  const removed = 'FATAL:  requested WAL segment 000000010000000000000003 has already been removed';
  assert.equal(retry.wanted(removed, true, 10), true);
  // Later refusals of the same run are WalRemovedWatch's to count towards a re-clone, not retried.
  assert.equal(retry.wanted(removed, false, 20), false);
});

it('quick retry: a refusal that lasts falls back to postgres interval, and a later one is quick again', () => {
  const retry = new QuickRetry();
  for (let i = 0; i < QUICK_RETRIES; i++) assert.equal(retry.wanted(slotMissing, false, i * 100), true);
  assert.equal(retry.wanted(slotMissing, false, QUICK_RETRIES * 100), false, 'the window is spent');
  assert.equal(retry.wanted(slotMissing, false, QUICK_RETRY_WINDOW_MS - 1), false);
  assert.equal(retry.wanted(slotMissing, false, QUICK_RETRY_WINDOW_MS), true, 'the first retry left the window');
});
