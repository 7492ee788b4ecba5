/**
 * The API calls a process node makes, over one pooled undici agent with the admin credentials.
 * testenv cannot use @kanri/client (that package tests against testenv), so this is a small,
 * deliberately narrow JSON client: get, list, create, patch, delete, and watch as a change signal.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Kubeconfig } from '../credentials/kubeconfig.js';
import { type RestTarget, restTargetFromKubeconfig } from '../rest.js';

export class ApiError extends Error {
  readonly status: number;
  constructor(method: string, path: string, status: number, body: unknown) {
    const message = (body as { message?: string } | undefined)?.message ?? String(body).slice(0, 300);
    super(`${method} ${path} failed with ${status}: ${message}`);
    this.status = status;
  }
}

export type PatchType = 'merge' | 'strategic';
const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

export interface WatchEvent {
  readonly type: string;
  readonly object: unknown;
}

export class Api {
  readonly #target: RestTarget;
  readonly #timeoutMs: number;

  constructor(kubeconfig: Kubeconfig, timeoutMs = 30_000) {
    this.#target = restTargetFromKubeconfig(kubeconfig);
    this.#timeoutMs = timeoutMs;
  }

  get server(): string {
    return this.#target.server;
  }

  async #send<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ status: number; body: T }> {
    const response = await request(`${this.#target.server}${path}`, {
      method,
      dispatcher: this.#target.dispatcher,
      headers:
        body === undefined
          ? { accept: 'application/json' }
          : { accept: 'application/json', 'content-type': contentType },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    const text = await response.body.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Non-JSON error bodies are kept as text for the message.
    }
    return { status: response.statusCode, body: parsed as T };
  }

  async #expect<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    path: string,
    ok: (status: number) => boolean,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; body: T }> {
    const response = await this.#send<T>(method, path, body, contentType);
    if (!ok(response.status)) throw new ApiError(method, path, response.status, response.body);
    return response;
  }

  /** The object at `path`, or undefined if it does not exist. */
  async get<T>(path: string): Promise<T | undefined> {
    const response = await this.#expect<T>('GET', path, (s) => s === 200 || s === 404);
    return response.status === 404 ? undefined : response.body;
  }

  async list<T>(path: string): Promise<T[]> {
    const response = await this.#expect<{ items?: T[] }>('GET', path, (s) => s === 200);
    return response.body.items ?? [];
  }

  /** Creates the object; returns undefined if it already exists. */
  async create<T>(path: string, body: unknown): Promise<T | undefined> {
    const response = await this.#expect<T>('POST', path, (s) => s === 200 || s === 201 || s === 409, body);
    return response.status === 409 ? undefined : response.body;
  }

  async createOrThrow<T>(path: string, body: unknown): Promise<T> {
    return (await this.#expect<T>('POST', path, (s) => s === 200 || s === 201, body)).body;
  }

  async put<T>(path: string, body: unknown): Promise<T> {
    return (await this.#expect<T>('PUT', path, (s) => s === 200 || s === 201, body)).body;
  }

  async patch<T>(path: string, body: unknown, type: PatchType = 'merge'): Promise<T> {
    return (await this.#expect<T>('PATCH', path, (s) => s === 200, body, PATCH_CONTENT_TYPE[type])).body;
  }

  /** Deletes the object; false if it was already gone (or the precondition no longer holds). */
  async delete(path: string, options?: unknown): Promise<boolean> {
    const response = await this.#expect(
      'DELETE',
      path,
      (s) => s === 200 || s === 202 || s === 404 || s === 409,
      options,
    );
    return response.status === 200 || response.status === 202;
  }

  /**
   * Calls `onEvent` for every watch event on `path` (a collection URL with its query) until
   * `signal` aborts, reopening the watch after errors. A new watch starts with ADDED events for
   * every existing object, so callers that treat events as a "something changed" signal and
   * re-read the state never miss a change.
   */
  async watch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const separator = path.includes('?') ? '&' : '?';
    while (!signal.aborted) {
      try {
        const response = await request(`${this.#target.server}${path}${separator}watch=1&timeoutSeconds=300`, {
          dispatcher: this.#target.dispatcher,
          headers: { accept: 'application/json' },
          signal,
        });
        if (response.statusCode !== 200) {
          await response.body.text();
          throw new ApiError('WATCH', path, response.statusCode, undefined);
        }
        let buffer = '';
        for await (const chunk of response.body) {
          buffer += chunk.toString();
          let newline = buffer.indexOf('\n');
          while (newline !== -1) {
            const line = buffer.slice(0, newline).trim();
            buffer = buffer.slice(newline + 1);
            if (line) onEvent(JSON.parse(line) as WatchEvent);
            newline = buffer.indexOf('\n');
          }
        }
      } catch {
        if (signal.aborted) return;
        await sleep(1_000, undefined, { signal }).catch(() => {});
      }
    }
  }

  async close(): Promise<void> {
    await this.#target.dispatcher.close().catch(() => {});
  }

  /** Closes every connection at once, aborting requests in flight. */
  async destroy(): Promise<void> {
    await this.#target.dispatcher.destroy().catch(() => {});
  }
}

/** Kubernetes' Time format (whole seconds). */
export function kubeTime(date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const encode = encodeURIComponent;
