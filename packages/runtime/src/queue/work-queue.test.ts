import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { exponentialFailureRateLimiter } from './rate-limiter.js';
import { WorkQueue, type WorkQueueMetrics } from './work-queue.js';

/**
 * Fails if `promise` does not settle within `ms`. Its timer also keeps the event loop alive, which
 * the queue's own (unref'd) timers do not.
 */
async function within<T>(ms: number, promise: Promise<T>, what = 'promise'): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** True if `promise` is still pending after everything already queued on the event loop has run. */
async function isPending(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await nextTurn();
  return !settled;
}

/** A small seeded PRNG (mulberry32), so a failing random run can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('WorkQueue', () => {
  it('hands keys out in the order they were first added, each once', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'a', 'c', 'b']) queue.add(key);
    assert.equal(queue.length, 3);
    assert.deepEqual([await queue.get(), await queue.get(), await queue.get()], ['a', 'b', 'c']);
    assert.equal(queue.length, 0);
    assert.equal(queue.processing, 3);
  });

  it('gives concurrent getters different keys, in the order they asked', async () => {
    const queue = new WorkQueue();
    const getters = [queue.get(), queue.get(), queue.get()];
    queue.add('x');
    queue.add('y');
    queue.add('x');
    queue.add('z');
    assert.deepEqual(await Promise.all(getters), ['x', 'y', 'z']);
  });

  it('serves a waiting getter before a get() that comes after the add', async () => {
    const queue = new WorkQueue();
    const first = queue.get();
    queue.add('a');
    const second = queue.get();
    queue.add('b');
    assert.deepEqual(await Promise.all([first, second]), ['a', 'b']);
  });

  it('holds back a key added while in flight until it is done, then hands it out again', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    assert.equal(await queue.get(), 'a');
    queue.add('a');
    queue.add('a');
    assert.equal(queue.length, 0, 'an in-flight key does not wait in the queue');
    const second = queue.get();
    assert.equal(await isPending(second), true, 'a second worker must not get the key while the first holds it');
    queue.done('a');
    assert.equal(await within(1_000, second), 'a');
    queue.done('a');
    assert.equal(queue.length, 0, 'the two adds during processing ran once');
    assert.equal(queue.processing, 0);
  });

  it('does not hand a key out again after done if nobody added it meanwhile', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    assert.equal(await queue.get(), 'a');
    queue.done('a');
    queue.done('a'); // a repeated or stray done is ignored
    queue.done('never-added');
    assert.equal(queue.length, 0);
    assert.equal(await isPending(queue.get()), true);
    queue.shutDown();
  });

  it('never lets two of 8 workers hold a key at once, and processes every key after its last add', async () => {
    const queue = new WorkQueue();
    const rand = random(42);
    const keys = Array.from({ length: 200 }, (_, i) => `ns/obj-${i}`);
    const held = new Set<string>();
    const violations: string[] = [];
    let tick = 0;
    const lastAdd = new Map<string, number>();
    const lastStart = new Map<string, number>();
    let maxConcurrent = 0;

    const worker = async (): Promise<void> => {
      for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
        if (held.has(key)) violations.push(key);
        held.add(key);
        maxConcurrent = Math.max(maxConcurrent, held.size);
        lastStart.set(key, ++tick);
        if (rand() < 0.3) await sleep(1);
        else await nextTurn();
        held.delete(key);
        queue.done(key);
      }
    };
    const workers = Array.from({ length: 8 }, worker);

    const until = performance.now() + 300;
    // At least 150 rounds however slow the machine, so that nearly every key is added.
    for (let round = 0; round < 150 || performance.now() < until; round++) {
      const batch = 1 + Math.floor(rand() * 20);
      for (let i = 0; i < batch; i++) {
        const key = keys[Math.floor(rand() * keys.length)] ?? 'ns/obj-0';
        lastAdd.set(key, ++tick);
        queue.add(key);
      }
      await (rand() < 0.5 ? nextTurn() : sleep(1));
    }

    await within(2_000, queue.shutDownWithDrain(), 'drain');
    await within(1_000, Promise.all(workers), 'workers');
    assert.deepEqual(violations, [], 'keys handed to two workers at once');
    assert.equal(held.size, 0);
    assert.ok(lastAdd.size > 150, `only ${lastAdd.size} distinct keys were added`);
    assert.ok(maxConcurrent > 1, 'the workers never overlapped, so the test proved nothing');
    for (const [key, added] of lastAdd) {
      const started = lastStart.get(key) ?? 0;
      assert.ok(started > added, `${key} last added at tick ${added} but last processed at tick ${started}`);
    }
  });

  describe('addAfter', () => {
    it('adds keys when their delays run out, soonest first', async () => {
      const queue = new WorkQueue();
      queue.addAfter('a', 90);
      queue.addAfter('b', 10);
      queue.addAfter('c', 50);
      queue.add('d');
      assert.equal(queue.length, 1, 'delayed keys do not wait in the queue yet');
      const order: (string | undefined)[] = [];
      for (let i = 0; i < 4; i++) order.push(await within(2_000, queue.get()));
      assert.deepEqual(order, ['d', 'b', 'c', 'a']);
    });

    it('keeps the earlier time when a key is scheduled twice', async () => {
      const queue = new WorkQueue();
      queue.addAfter('sooner-second', 5_000);
      queue.addAfter('sooner-second', 10);
      queue.addAfter('sooner-first', 10);
      queue.addAfter('sooner-first', 5_000);
      const start = performance.now();
      const got = new Set([await within(1_000, queue.get()), await within(1_000, queue.get())]);
      assert.deepEqual(got, new Set(['sooner-first', 'sooner-second']));
      assert.ok(performance.now() - start < 1_000);

      // The replaced timer must be gone: it would add the key again after 150 ms.
      queue.addAfter('replaced', 150);
      queue.addAfter('replaced', 5);
      assert.equal(await within(1_000, queue.get()), 'replaced');
      queue.done('replaced');
      await sleep(300);
      assert.equal(queue.length, 0, 'the replaced timer fired too');
    });

    it('adds at once for a delay of zero or less', () => {
      const queue = new WorkQueue();
      queue.addAfter('zero', 0);
      queue.addAfter('negative', -10);
      queue.addAfter('nan', Number.NaN);
      assert.equal(queue.length, 3);
    });

    it('does not keep the process alive', async () => {
      const url = new URL('./work-queue.js', import.meta.url).href;
      const script = `
        import { WorkQueue } from ${JSON.stringify(url)};
        const queue = new WorkQueue();
        queue.addAfter('a', 60_000);
        queue.addRateLimited('b');
        queue.get();`;
      const run = promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 10_000 });
      const { stderr } = await run;
      assert.equal(stderr, '');
    });
  });

  describe('rate limiting', () => {
    it('re-adds with growing delays until forgotten', async (t) => {
      const queue = new WorkQueue({ rateLimiter: exponentialFailureRateLimiter(30, 10_000) });
      // Wall-clock waits are unreliable under load (Node's timer clock can lag), so check the delays asked for.
      const addAfter = t.mock.method(queue, 'addAfter');
      queue.add('a');
      assert.equal(await queue.get(), 'a');
      for (let i = 0; i < 3; i++) {
        queue.addRateLimited('a');
        queue.done('a');
        assert.equal(queue.length, 0, 'a rate-limited key is not queued at once');
        assert.equal(await within(2_000, queue.get()), 'a');
      }
      queue.done('a');
      assert.deepEqual(
        addAfter.mock.calls.map((call) => call.arguments),
        [
          ['a', 30],
          ['a', 60],
          ['a', 120],
        ],
      );
      assert.equal(queue.numRequeues('a'), 3);
      queue.forget('a');
      assert.equal(queue.numRequeues('a'), 0);
      queue.addRateLimited('a');
      assert.deepEqual(addAfter.mock.calls.at(-1)?.arguments, ['a', 30]);
      queue.shutDown();
    });

    it('uses controller-runtime default backoff when given no limiter', () => {
      const queue = new WorkQueue();
      queue.addRateLimited('a');
      queue.addRateLimited('a');
      assert.equal(queue.numRequeues('a'), 2);
      assert.equal(queue.length, 0);
      queue.shutDown();
    });
  });

  describe('shutdown', () => {
    it('wakes waiting getters with undefined, cancels delayed adds and ignores later adds', async (t) => {
      const addCalls: number[] = [];
      const queue = new WorkQueue({ metrics: { add: () => addCalls.push(1) } });
      queue.addAfter('delayed', 20);
      queue.addAfter('delayed-too', 5_000);
      const getters = [queue.get(), queue.get()];
      const clearTimeoutSpy = t.mock.method(globalThis, 'clearTimeout');
      queue.shutDown();
      assert.equal(clearTimeoutSpy.mock.callCount(), 2, 'both delay timers cleared');
      assert.equal(queue.shuttingDown, true);
      assert.deepEqual(await within(1_000, Promise.all(getters)), [undefined, undefined]);
      queue.add('late');
      queue.addAfter('late-delayed', 0);
      queue.addRateLimited('late-limited');
      assert.equal(await queue.get(), undefined);
      await within(1_000, sleep(60));
      assert.equal(queue.length, 0, 'a delayed add fired after shutdown');
      assert.deepEqual(addCalls, []);
      assert.equal(queue.numRequeues('late-limited'), 0, 'a retry after shutdown was counted');
    });

    it('still hands out keys that were waiting, and one re-added during processing, then undefined', async () => {
      const queue = new WorkQueue();
      for (const key of ['a', 'b', 'c']) queue.add(key);
      assert.equal(await queue.get(), 'a');
      queue.add('a');
      queue.shutDown();
      assert.equal(await queue.get(), 'b');
      queue.done('a');
      assert.deepEqual([await queue.get(), await queue.get(), await queue.get()], ['c', 'a', undefined]);
    });

    it('shutDownWithDrain waits until every key handed out, or still waiting, is done', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      queue.add('b');
      assert.equal(await queue.get(), 'a');
      const drained = queue.shutDownWithDrain();
      assert.equal(await isPending(drained), true, 'a is in flight');
      queue.done('a');
      assert.equal(await isPending(drained), true, 'b is still waiting');
      assert.equal(await queue.get(), 'b', 'keys waiting at shutdown are still handed out');
      assert.equal(await isPending(drained), true, 'b is in flight');
      assert.equal(await queue.get(), undefined);
      queue.done('b');
      await within(1_000, drained, 'drain');
      assert.equal(queue.processing, 0);
    });

    it('shutDown with discardWaiting starts nothing new: waiting keys and re-added in-flight keys are dropped', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      queue.add('b');
      queue.add('c');
      assert.equal(await queue.get(), 'a');
      queue.add('a'); // dirty while in flight: done() would hand it out again
      const drained = queue.shutDownWithDrain();
      queue.shutDown({ discardWaiting: true });
      assert.equal(await queue.get(), undefined, 'b and c are dropped');
      assert.equal(await isPending(drained), true, 'a is still in flight');
      queue.done('a');
      assert.equal(await queue.get(), undefined, 'a is not handed out again');
      await within(1_000, drained, 'drain');
      assert.equal(queue.length, 0);
    });

    it('shutDownWithDrain resolves at once when nothing is in flight', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      assert.equal(await queue.get(), 'a');
      queue.done('a');
      await within(1_000, queue.shutDownWithDrain(), 'drain');
      await within(1_000, queue.shutDownWithDrain(), 'second drain');
    });
  });

  it('reports metrics: adds, depth, queue latency, work duration and retries', async () => {
    let t = 10_000;
    const calls = {
      add: 0,
      retry: 0,
      depth: [] as number[],
      latency: [] as number[],
      work: [] as number[],
    };
    const metrics: WorkQueueMetrics = {
      add: () => calls.add++,
      retry: () => calls.retry++,
      depth: (n) => calls.depth.push(n),
      queueLatency: (s) => calls.latency.push(s),
      workDuration: (s) => calls.work.push(s),
    };
    const queue = new WorkQueue({ metrics, now: () => t, rateLimiter: exponentialFailureRateLimiter(1_000) });
    queue.add('a');
    t += 500;
    queue.add('b');
    queue.add('a'); // a duplicate: no metrics
    assert.equal(calls.add, 2);
    assert.deepEqual(calls.depth, [1, 2]);

    t += 1_000;
    assert.equal(await queue.get(), 'a');
    assert.deepEqual(calls.depth, [1, 2, 1]);
    assert.deepEqual(calls.latency, [1.5], 'a waited from its first add');

    t += 250;
    queue.add('a'); // in flight: counted as an add, but not waiting
    assert.equal(calls.add, 3);
    assert.deepEqual(calls.depth, [1, 2, 1]);

    t += 250;
    queue.done('a');
    assert.deepEqual(calls.work, [0.5]);
    assert.deepEqual(calls.depth, [1, 2, 1, 2], 'done put a back');

    t += 1_000;
    assert.equal(await queue.get(), 'b');
    assert.equal(await queue.get(), 'a');
    assert.deepEqual(calls.latency, [1.5, 2.5, 1.25], 'the re-added a waited from its add during processing');
    assert.deepEqual(calls.depth, [1, 2, 1, 2, 1, 0]);

    queue.addRateLimited('c');
    assert.equal(calls.retry, 1);
    assert.equal(calls.add, 3, 'a rate-limited add is only counted once its delay has passed');
    queue.shutDown();
  });
});
