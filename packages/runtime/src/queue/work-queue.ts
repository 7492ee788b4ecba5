/**
 * The controller work queue: keys of objects to reconcile, handed to workers one key at a time,
 * with delayed and rate-limited re-adds (client-go's workqueue, as controller-runtime uses it).
 *
 * Guarantees:
 * - per-key exclusivity: a key handed out by `get()` is not handed out again until `done(key)`,
 *   so two workers never reconcile the same object at once, however many call `get()`;
 * - nothing is lost: adding a key while it is being processed marks it dirty, and `done(key)`
 *   puts it back, so the work always runs once more after the last add;
 * - dedupe: a key waits in the queue at most once; adding it again changes nothing, not even
 *   its place;
 * - ordering: keys are handed out in the order they were first added (a key re-queued by
 *   `done()` goes to the back); waiting getters are served in the order they called `get()`;
 * - `addAfter` keeps one timer per key and the earliest requested time wins; timers never keep
 *   the process alive and are cleared by shutdown.
 *
 * Shutdown follows client-go: after `shutDown()` adds are ignored, but `get()` still hands out
 * the keys already waiting (including a dirty key that `done()` puts back) and resolves
 * `undefined` once there are none, so a worker loop `while ((key = await queue.get()) !== undefined)`
 * simply ends. `shutDownWithDrain()` resolves once nothing is waiting and nothing is in flight:
 * every key handed out, before or after shutdown, has been `done()`.
 *
 * Caveats:
 * - `shutDownWithDrain()` relies on workers to take the keys still waiting: with keys waiting and
 *   no worker calling `get()`, it stays pending (bound it with a timeout on SIGTERM);
 * - a plain `add()` does not cancel a pending `addAfter()` of the same key: the timer still adds
 *   it later, which at worst means one extra reconcile (as in client-go);
 * - delays longer than setTimeout's limit (about 24.8 days) fire at that limit;
 * - the rate limiter remembers a key until `forget(key)`: call it when a reconcile succeeds.
 */
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.js';

/**
 * Hooks for queue metrics; every one is optional. Durations are in seconds, as Prometheus
 * expects (client-go's workqueue_* metrics).
 */
export interface WorkQueueMetrics {
  /** A key was accepted (not a duplicate, not after shutdown). */
  add?(): void;
  /** The number of keys waiting changed to `n`. */
  depth?(n: number): void;
  /** A key was handed out `seconds` after it was first added. */
  queueLatency?(seconds: number): void;
  /** A key was done `seconds` after it was handed out. */
  workDuration?(seconds: number): void;
  /** A key was re-added through `addRateLimited`. */
  retry?(): void;
}

export interface WorkQueueOptions<K extends string = string> {
  /** Identifies the queue, e.g. as a metrics label; the queue itself does not use it. */
  readonly name?: string;
  /** Delays for `addRateLimited`. Default: `defaultControllerRateLimiter()`. */
  readonly rateLimiter?: RateLimiter<K>;
  readonly metrics?: WorkQueueMetrics;
  /** A monotonic clock in milliseconds, for metrics and `addAfter` comparisons. Default: `performance.now`. */
  readonly now?: () => number;
}

/** setTimeout's largest delay; anything longer fires after 1 ms instead. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A deduplicating, per-key exclusive work queue with delayed and rate-limited adds.
 *
 * @example
 * ```ts
 * import { WorkQueue } from './work-queue.js';
 *
 * const queue = new WorkQueue({ name: 'pods' });
 * queue.add('default/web');
 * const worker = async () => {
 *   for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
 *     try {
 *       await reconcile(key);
 *       queue.forget(key);
 *     } catch {
 *       queue.addRateLimited(key);
 *     } finally {
 *       queue.done(key);
 *     }
 *   }
 * };
 * const workers = [worker(), worker()];
 * process.once('SIGTERM', () => void queue.shutDownWithDrain());
 * await Promise.all(workers);
 * ```
 */
export class WorkQueue<K extends string = string> {
  readonly name: string | undefined;
  readonly #rateLimiter: RateLimiter<K>;
  readonly #metrics: WorkQueueMetrics;
  readonly #now: () => number;

  /** Keys handed out in order: `#queue[#head]` onwards (an index instead of shift(), which is O(n) on large arrays). */
  #queue: K[] = [];
  #head = 0;
  /** Keys that need processing, waiting or in flight, with the time of their first add since then. */
  readonly #dirty = new Map<K, number>();
  /** Keys in flight, with the time they were handed out. */
  readonly #processing = new Map<K, number>();
  readonly #delayed = new Map<K, { readonly at: number; readonly timer: ReturnType<typeof setTimeout> }>();
  /** Pending `get()` calls; only ever non-empty while no key is waiting. */
  readonly #getters: ((key: K | undefined) => void)[] = [];
  readonly #drainers: (() => void)[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions<K> = {}) {
    this.name = options.name;
    this.#rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<K>();
    this.#metrics = options.metrics ?? {};
    this.#now = options.now ?? (() => performance.now());
  }

  /** The number of keys waiting to be handed out (the queue depth). */
  get length(): number {
    return this.#queue.length - this.#head;
  }

  /** The number of keys handed out and not yet done. */
  get processing(): number {
    return this.#processing.size;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Queues `key` unless it is already waiting; if it is in flight, queues it again once it is done. */
  add(key: K): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.set(key, this.#now());
    this.#metrics.add?.();
    if (!this.#processing.has(key)) this.#enqueue(key);
  }

  /** Adds `key` after `delayMs`; if it is already scheduled, the earlier time wins. */
  addAfter(key: K, delayMs: number): void {
    if (this.#shuttingDown) return;
    // `!(x > 0)` also sends NaN here rather than into a timer.
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const at = this.#now() + delayMs;
    const scheduled = this.#delayed.get(key);
    if (scheduled) {
      if (scheduled.at <= at) return;
      clearTimeout(scheduled.timer);
    }
    const timer = setTimeout(
      () => {
        this.#delayed.delete(key);
        this.add(key);
      },
      Math.min(delayMs, MAX_TIMER_MS),
    );
    // A queue waiting for a retry must not hold the process open; what runs the workers does.
    timer.unref();
    this.#delayed.set(key, { at, timer });
  }

  /** Re-adds `key` after its rate limiter's delay, which grows with each call until `forget(key)`. */
  addRateLimited(key: K): void {
    if (this.#shuttingDown) return;
    this.#metrics.retry?.();
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  /** Resets the rate limiter's history of `key`; call it once `key` was processed successfully. */
  forget(key: K): void {
    this.#rateLimiter.forget(key);
  }

  /** How many times `key` was re-added through `addRateLimited` since it was last forgotten. */
  numRequeues(key: K): number {
    return this.#rateLimiter.retries(key);
  }

  /**
   * The next key, marked as in flight until `done(key)`; waits while the queue is empty.
   * Resolves `undefined` once the queue is shut down and no key is waiting.
   */
  get(): Promise<K | undefined> {
    const key = this.#take();
    if (key !== undefined || this.#shuttingDown) return Promise.resolve(key);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** Ends processing of `key`; if it was added meanwhile, queues it again. A key not in flight is ignored. */
  done(key: K): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics.workDuration?.((this.#now() - startedAt) / 1000);
    if (this.#dirty.has(key)) this.#enqueue(key);
    this.#settleDrain();
  }

  /**
   * Stops accepting adds and cancels delayed adds. Keys already waiting are still handed out
   * (unless `discardWaiting`, which drops them: nothing new starts); then `get()` resolves
   * `undefined`, at once for getters that are waiting now.
   */
  shutDown(options: { discardWaiting?: boolean } = {}): void {
    if (options.discardWaiting) {
      // Keys in flight that were added again are dropped too: done() queues only dirty keys.
      this.#dirty.clear();
      this.#queue = [];
      this.#head = 0;
      this.#metrics.depth?.(0);
    }
    if (!this.#shuttingDown) {
      this.#shuttingDown = true;
      for (const { timer } of this.#delayed.values()) clearTimeout(timer);
      this.#delayed.clear();
      // Getters only wait while no key does, so each of them is done.
      for (const resolve of this.#getters.splice(0)) resolve(undefined);
    }
    this.#settleDrain();
  }

  /**
   * Shuts down like `shutDown()`, then resolves once no key is waiting or in flight: every key
   * handed out has been `done()`. Used on SIGTERM to let in-flight reconciles finish.
   */
  shutDownWithDrain(): Promise<void> {
    const drained = new Promise<void>((resolve) => this.#drainers.push(resolve));
    this.shutDown();
    return drained;
  }

  #enqueue(key: K): void {
    this.#queue.push(key);
    this.#metrics.depth?.(this.length);
    // A getter waits only while the queue is empty, so this key is the only one for it.
    const getter = this.#getters.shift();
    // Taking the key now, not when the getter's promise settles, keeps a later get() from taking it too.
    if (getter) getter(this.#take());
  }

  #take(): K | undefined {
    const key = this.#queue[this.#head];
    if (key === undefined) return undefined;
    this.#head++;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    const now = this.#now();
    const addedAt = this.#dirty.get(key) ?? now;
    this.#dirty.delete(key);
    this.#processing.set(key, now);
    this.#metrics.depth?.(this.length);
    this.#metrics.queueLatency?.((now - addedAt) / 1000);
    return key;
  }

  #settleDrain(): void {
    if (!this.#shuttingDown || this.#processing.size > 0 || this.length > 0) return;
    for (const resolve of this.#drainers.splice(0)) resolve();
  }
}
