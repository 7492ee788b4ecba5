import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createDeadline } from './deadline.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

it('fires after its time even when garbage collection runs meanwhile (the AbortSignal.any trap)', async () => {
  const parent = new AbortController();
  const fired: Promise<string>[] = [];
  for (let i = 0; i < 20; i++) {
    const { signal } = createDeadline(100, parent.signal);
    fired.push(
      new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason.name), { once: true })),
    );
  }
  gc();
  const outcome = await Promise.race([Promise.all(fired), sleep(2_000, 'not all fired')]);
  assert.deepEqual(outcome, Array(20).fill('TimeoutError'));
});

it('aborts with a parent, and not after dispose', async () => {
  const parent = new AbortController();
  const deadline = createDeadline(10_000, undefined, parent.signal);
  parent.abort(new Error('stopping'));
  assert.equal(deadline.signal.aborted, true);
  assert.ok(deadline.signal.reason instanceof Error);
  assert.equal(deadline.signal.reason.message, 'stopping');
  deadline.dispose();
  const quiet = createDeadline(20);
  quiet.dispose();
  await sleep(60);
  assert.equal(quiet.signal.aborted, false);
});
