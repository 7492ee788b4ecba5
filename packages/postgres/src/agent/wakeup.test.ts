import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Wakeup } from './wakeup.js';

it('ends a wait early on wake, remembers a wake that came first, and ends on abort', async () => {
  const wakeup = new Wakeup();
  const never = new AbortController();
  const waiting = wakeup.wait(60_000, never.signal);
  wakeup.wake();
  await waiting;
  wakeup.wake();
  await wakeup.wait(60_000, never.signal);
  const stop = new AbortController();
  const stopped = wakeup.wait(60_000, stop.signal);
  stop.abort();
  await stopped;
  const started = performance.now();
  await wakeup.wait(20, never.signal);
  assert.ok(performance.now() - started >= 10, 'a plain wait lasts its time');
});
