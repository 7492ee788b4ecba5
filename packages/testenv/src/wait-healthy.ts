/** Polls a component's health endpoint until it answers 200, failing fast (with its log) if the process exits first. */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Dispatcher, request } from 'undici';
import { ComponentStartError } from './errors.js';
import type { ManagedProcess } from './managed-process.js';

export interface WaitHealthyOptions {
  readonly process: ManagedProcess;
  readonly url: string;
  readonly dispatcher?: Dispatcher;
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
}

export async function waitHealthy(options: WaitHealthyOptions): Promise<void> {
  const { process: child, url } = options;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let last = 'no response yet';
  while (Date.now() < deadline) {
    if (!child.running) {
      const status = child.exitStatus;
      const how = status?.signal ? `was killed by ${status.signal}` : `exited with code ${status?.code}`;
      throw new ComponentStartError(child.name, `${how} before becoming healthy`, await child.logTail());
    }
    try {
      const response = await request(url, {
        dispatcher: options.dispatcher,
        headersTimeout: 5_000,
        bodyTimeout: 5_000,
      });
      const body = await response.body.text();
      if (response.statusCode === 200) return;
      last = `${url} answered ${response.statusCode}: ${body.slice(0, 2_000)}`;
    } catch (error) {
      last = `${url}: ${error instanceof Error ? error.message : String(error)}`;
    }
    await sleep(options.intervalMs ?? 100);
  }
  throw new ComponentStartError(
    child.name,
    `not healthy after ${options.timeoutMs ?? 60_000} ms (${last})`,
    await child.logTail(),
  );
}
