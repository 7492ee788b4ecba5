/**
 * The HTTP edge of the client: one pooled keep-alive agent per cluster (per client certificate,
 * when an exec plugin rotates it), JSON in and out with plain `JSON.parse`/`stringify` so no field
 * is ever dropped, typed errors, and retries only where they are safe.
 *
 * It rides on Node's own `http`/`https` rather than undici: an operator or instance agent talks to
 * one API server over a few keep-alive connections, and undici costs about 16 MiB of RSS at import
 * plus a WebAssembly HTTP parser whose tier-up compile briefly takes ~35 MiB more, against ~2 MiB
 * for the built-in modules (measured by bench/memory, which is what the memory goals are about).
 */
import { type ClientRequest, Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterConnection } from '../config/load-kubeconfig.js';
import {
  ConnectionError,
  errorFromResponse,
  KubeError,
  type RequestContext,
  TimeoutError,
  UnauthorizedError,
} from '../errors.js';
import { ListDecoder } from './list-decoder.js';
import { decideRetry } from './retry-policy.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HttpRequest {
  readonly method: HttpMethod;
  /** Absolute path, starting with `/`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** Serialized with JSON.stringify. */
  readonly body?: unknown;
  readonly contentType?: string;
  readonly accept?: string;
  readonly signal?: AbortSignal;
  /** Per-request timeout for the response headers and (for non-streams) the body. */
  readonly timeoutMs?: number;
  readonly context?: Omit<RequestContext, 'method' | 'path'>;
}

export interface TransportOptions {
  /** Attempts for a retryable failure, including the first. Default 5. */
  readonly maxAttempts?: number;
  /** Default request timeout. Default 30 s. */
  readonly timeoutMs?: number;
  readonly userAgent?: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;

function buildUrlPath(path: string, query: HttpRequest['query']): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

function codeOf(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null && 'code' in value && typeof value.code === 'string'
    ? value.code
    : undefined;
}

/** Node's code for a failed connection (ECONNREFUSED…), on undici's error or the cause it wraps. */
function networkErrorCode(error: unknown): string | undefined {
  return codeOf(error) ?? (error instanceof Error ? codeOf(error.cause) : undefined);
}

/** No response headers, or a silent body, within the request's timeout. */
class RequestTimeout extends Error {
  readonly code = 'ETIMEDOUT';
}

/** A response whose body the caller must consume or destroy. */
interface Response {
  readonly statusCode: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: IncomingMessage;
}

/** The whole body as one flat string (chunks joined once, not a rope of concatenations). */
async function readText(body: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
}

type Agent = HttpAgent | HttpsAgent;

export class HttpTransport {
  readonly connection: ClusterConnection;
  readonly #agents = new Map<string, Agent>();
  readonly #maxAttempts: number;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #server: URL;

  constructor(connection: ClusterConnection, options: TransportOptions = {}) {
    this.connection = connection;
    this.#maxAttempts = options.maxAttempts ?? 5;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#userAgent = options.userAgent ?? 'kanri/0.1';
    this.#server = new URL(connection.server);
  }

  get #secure(): boolean {
    return this.#server.protocol === 'https:';
  }

  /** One agent per client-certificate identity; with static credentials that is one agent for the cluster's lifetime. */
  #agent(cert: string | undefined, key: string | undefined): Agent {
    const id = cert ?? '';
    let agent = this.#agents.get(id);
    if (!agent) {
      const tls = this.connection.tls;
      // Idle keep-alive connections close after 30 s (the agent's socket timeout only ends free sockets).
      agent = this.#secure
        ? new HttpsAgent({
            keepAlive: true,
            timeout: 30_000,
            ca: tls.ca,
            cert,
            key,
            servername: tls.servername,
            rejectUnauthorized: tls.rejectUnauthorized,
          })
        : new HttpAgent({ keepAlive: true, timeout: 30_000 });
      // A rotated exec certificate replaces the previous agent; its connections end once idle.
      for (const [oldId, old] of this.#agents) {
        if (oldId !== id) {
          this.#agents.delete(oldId);
          old.destroy();
        }
      }
      this.#agents.set(id, agent);
    }
    return agent;
  }

  async #dispatch(request: HttpRequest, streaming: boolean): Promise<Response> {
    const credentials = this.connection.credentials ? await this.connection.credentials.current() : {};
    const headers: Record<string, string> = {
      accept: request.accept ?? 'application/json',
      'user-agent': this.#userAgent,
    };
    if (credentials.token) headers.authorization = `Bearer ${credentials.token}`;
    else if (credentials.basic) headers.authorization = `Basic ${Buffer.from(credentials.basic).toString('base64')}`;
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    if (body !== undefined) {
      headers['content-type'] = request.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const timeout = request.timeoutMs ?? this.#timeoutMs;
    const agent = this.#agent(credentials.cert ?? this.connection.tls.cert, credentials.key ?? this.connection.tls.key);
    const send = this.#secure ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      let req: ClientRequest;
      try {
        req = send({
          protocol: this.#server.protocol,
          hostname: this.#server.hostname.replace(/^\[|\]$/g, ''),
          port: this.#server.port || undefined,
          path: buildUrlPath(`${this.#server.pathname.replace(/\/$/, '')}${request.path}`, request.query),
          method: request.method,
          headers,
          agent,
          signal: request.signal,
        });
      } catch (error) {
        reject(error);
        return;
      }
      let response: IncomingMessage | undefined;
      // The socket's idle timer: no headers, or (for non-streams) a body that stops, within `timeout`.
      req.setTimeout(timeout, () => {
        const error = new RequestTimeout(`no response within ${timeout} ms`);
        response?.destroy(error);
        req.destroy(error);
      });
      // Kept for the request's lifetime: a socket error after the headers also lands here (and on the body).
      req.on('error', reject);
      req.once('response', (res) => {
        response = res;
        // A watch stays open for minutes with long silences; the watcher's own idle timer guards it.
        if (streaming) req.setTimeout(0);
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res });
      });
      req.end(body);
    });
  }

  /** Sends the request with retries; resolves with a 2xx response whose body the caller must consume. */
  async #send(request: HttpRequest, streaming: boolean): Promise<Response> {
    const context: RequestContext = { method: request.method, path: request.path, ...request.context };
    let refreshedCredentials = false;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.#dispatch(request, streaming);
      } catch (error) {
        if (request.signal?.aborted || error instanceof KubeError) throw error;
        const code = networkErrorCode(error);
        const decision = decideRetry({
          method: request.method,
          attempt,
          errorCode: code ?? 'UNKNOWN',
          maxAttempts: this.#maxAttempts,
        });
        if (decision.retry) {
          await sleep(decision.delayMs, undefined, { signal: request.signal });
          continue;
        }
        if (error instanceof RequestTimeout) {
          throw new TimeoutError(context, `no response within ${request.timeoutMs ?? this.#timeoutMs} ms`, {
            cause: error,
          });
        }
        throw new ConnectionError(
          context,
          code,
          `cannot reach ${this.connection.server}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
      if (response.statusCode >= 200 && response.statusCode < 300) return response;

      const text = await readText(response.body);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not every failure is a Status object (proxies, plain-text 503s).
      }
      const retryAfter = response.headers['retry-after'];
      const error = errorFromResponse(
        response.statusCode,
        body,
        context,
        Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      );
      if (error instanceof UnauthorizedError && this.connection.credentials && !refreshedCredentials) {
        // An expired exec credential or a rotated token file: fetch afresh once, as client-go does.
        refreshedCredentials = true;
        this.connection.credentials.invalidate();
        continue;
      }
      const decision = decideRetry({
        method: request.method,
        attempt,
        statusCode: response.statusCode,
        retryAfterSeconds: 'retryAfterSeconds' in error ? (error.retryAfterSeconds as number | undefined) : undefined,
        maxAttempts: this.#maxAttempts,
      });
      if (!decision.retry) throw error;
      await sleep(decision.delayMs, undefined, { signal: request.signal });
    }
  }

  /** Sends a request and parses the JSON response. */
  async json<T>(request: HttpRequest): Promise<T> {
    const response = await this.#send(request, false);
    const text = await readText(response.body);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /**
   * Sends a list request and decodes its items one at a time as the body arrives (see
   * {@link ListDecoder}), so that a large list never exists as one string next to its objects.
   */
  async list<L extends { items: unknown[] }>(request: HttpRequest): Promise<L> {
    const response = await this.#send(request, false);
    const items: unknown[] = [];
    const decoder = new ListDecoder<unknown>((item) => items.push(item));
    for await (const chunk of response.body) decoder.write(chunk as Buffer);
    const list = decoder.end() as unknown as L;
    list.items = items;
    return list;
  }

  /** Opens a streaming response (watch); the caller iterates the body and must finish or destroy it. */
  async stream(request: HttpRequest): Promise<IncomingMessage> {
    return (await this.#send(request, true)).body;
  }

  async close(): Promise<void> {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }
}
