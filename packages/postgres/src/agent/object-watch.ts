/**
 * Follows one named object through the API: list (by name) + watch from that list's
 * resourceVersion, relisting after every watch ends (at most ~2 minutes) and after 410 Gone, with
 * jittered backoff on errors. Guarantees: `onChange` sees every state the object settles in
 * (undefined when it does not exist), never the same resourceVersion twice in a row; it never throws.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import { GoneError, type KubeObject, type ResourceClient } from '@kanri/client';
import { createDeadline } from '@kanri/runtime';
import type { Logger } from './logger.js';

export interface ObjectWatchOptions<T extends KubeObject> {
  readonly resource: ResourceClient<T>;
  readonly namespace: string;
  readonly name: string;
  readonly onChange: (object: T | undefined) => void | Promise<void>;
  readonly log: Logger;
  readonly signal: AbortSignal;
}

const WATCH_SECONDS: readonly [number, number] = [60, 120];
const MAX_BACKOFF_MS = 30_000;

/**
 * Runs until `signal` aborts.
 *
 * @example
 * ```ts
 * await watchObject({ resource: client.resource('v1', 'ConfigMap'), namespace: 'db', name: 'pg-config',
 *   onChange: (cm) => apply(cm?.data), log, signal });
 * ```
 */
export async function watchObject<T extends KubeObject>(options: ObjectWatchOptions<T>): Promise<void> {
  const { resource, namespace, name, log, signal } = options;
  const fieldSelector = `metadata.name=${name}`;
  let lastVersion: string | undefined | null = null;
  const deliver = async (object: T | undefined) => {
    const version = object?.metadata?.resourceVersion;
    if (version === lastVersion) return;
    lastVersion = version;
    try {
      await options.onChange(object);
    } catch (error) {
      log.error({ err: error, object: name }, 'handling a change failed');
    }
  };
  let failures = 0;
  while (!signal.aborted) {
    try {
      const list = await resource.list({ namespace, fieldSelector, signal });
      await deliver(list.items[0]);
      let resourceVersion = list.metadata?.resourceVersion;
      const [min, max] = WATCH_SECONDS;
      const timeoutSeconds = Math.floor(min + Math.random() * (max - min));
      // The server ends the watch after timeoutSeconds; a stream that died silently is cut a little later.
      const deadline = createDeadline((timeoutSeconds + 15) * 1000, signal);
      const watchSignal = deadline.signal;
      try {
        for await (const event of resource.watch({
          namespace,
          fieldSelector,
          resourceVersion,
          timeoutSeconds,
          signal: watchSignal,
        })) {
          resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
          if (event.type === 'BOOKMARK') continue;
          await deliver(event.type === 'DELETED' ? undefined : event.object);
        }
      } catch (error) {
        if (signal.aborted) return;
        // Our own timeout, or 410: relist at once.
        if (!(watchSignal.aborted || error instanceof GoneError)) throw error;
      } finally {
        deadline.dispose();
      }
      failures = 0;
    } catch (error) {
      if (signal.aborted) return;
      failures++;
      const delayMs = Math.min(500 * 2 ** Math.min(failures, 6), MAX_BACKOFF_MS) * (0.5 + Math.random());
      log.warn({ err: error, object: name, retryInMs: Math.round(delayMs) }, 'cannot follow the object; retrying');
      await sleep(delayMs, undefined, { signal }).catch(() => undefined);
    }
  }
}
