import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, backoffCeiling, backoffDelay } from './backoff.js';
import { sleepUnlessAborted, Wakeup } from './wakeup.js';

describe('Backoff', () => {
  it('doubles from initialMs up to maxMs, with no jitter', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1_000, jitter: 0 });
    assert.deepEqual(
      Array.from({ length: 6 }, () => backoff.next()),
      [100, 200, 400, 800, 1_000, 1_000],
    );
    assert.equal(backoff.attempt, 6);
    backoff.reset();
    assert.equal(backoff.next(), 100);
  });

  it('keeps each delay between (1 - jitter) and all of its ceiling', () => {
    const low = new Backoff({ initialMs: 100, jitter: 0.5, random: () => 0 });
    const high = new Backoff({ initialMs: 100, jitter: 0.5, random: () => 0.999999 });
    assert.deepEqual([low.next(), low.next()], [50, 100]);
    assert.deepEqual([high.next(), high.next()], [100, 200]);
  });

  it('backoffDelay gives the n-th delay without a Backoff object, jittered below its ceiling', () => {
    const options = { initialMs: 100, maxMs: 5_000, jitter: 0.2 };
    assert.deepEqual(
      [0, 2, 9].map((n) => backoffDelay(n, { ...options, random: () => 0 })),
      [80, 320, 4_000],
    );
    assert.deepEqual(
      [0, 2, 9].map((n) => backoffDelay(n, { ...options, random: () => 0.999999 })),
      [100, 400, 5_000],
    );
    assert.throws(() => backoffDelay(0, { jitter: -1 }), /jitter/);
  });

  it('never overflows, however long a loop has failed', () => {
    assert.equal(backoffCeiling(10_000, { initialMs: 1, maxMs: 5_000 }), 5_000);
  });

  it('refuses a jitter outside [0, 1]', () => {
    assert.throws(() => new Backoff({ jitter: 2 }), /jitter/);
  });

  it('wait resolves false at once on an aborted signal, true after the delay', async () => {
    const aborted = AbortSignal.abort();
    assert.equal(await new Backoff({ initialMs: 10_000 }).wait(aborted), false);
    const started = performance.now();
    assert.equal(await new Backoff({ initialMs: 5, jitter: 0 }).wait(), true);
    assert.ok(performance.now() - started >= 4);
  });
});

describe('Wakeup', () => {
  it('keeps a wake-up that came while nobody waited', async () => {
    const wakeup = new Wakeup();
    wakeup.wake();
    assert.equal(await wakeup.wait(60_000), true);
  });

  it('resolves false on timeout and on abort, and true when woken', async () => {
    const wakeup = new Wakeup();
    assert.equal(await wakeup.wait(1), false);
    const controller = new AbortController();
    const waiting = wakeup.wait(60_000, controller.signal);
    controller.abort();
    assert.equal(await waiting, false);
    const woken = wakeup.wait(60_000);
    wakeup.wake();
    assert.equal(await woken, true);
  });

  it('sleepUnlessAborted ends early on abort', async () => {
    const controller = new AbortController();
    const sleeping = sleepUnlessAborted(60_000, controller.signal);
    controller.abort();
    await sleeping;
  });
});
