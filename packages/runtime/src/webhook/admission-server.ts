/**
 * The HTTPS server the API server calls for admission: AdmissionReview v1 POSTs, routed by path to
 * handlers, answered with the same uid.
 *
 * Guarantees: it never crashes on a request. A handler that throws or rejects refuses the request
 * (`allowed: false`, code 500, with the error's message), so a bug fails closed in the direction the
 * webhook's `failurePolicy: Fail` already chose; a body that is not an AdmissionReview gets 400, a
 * body over the limit 413, another method 405, another path 404. The certificate can be swapped
 * without a restart (`setCertificate`), for renewal.
 */
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.js';
import { parseBindAddress } from '../net/bind-address.js';
import {
  type AdmissionDecision,
  type AdmissionHandler,
  buildAdmissionResponse,
  parseAdmissionReview,
} from './admission-review.js';

/**
 * The API server may put the object and the old object in one review, each up to its own 3 MiB
 * request limit; controller-runtime's webhook server allows 7 MiB for the same reason.
 */
export const DEFAULT_MAX_BODY_BYTES = 7 * 1024 * 1024;

export interface ServingKeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface AdmissionServerOptions {
  /** `host:port`; default `:9443` (every interface, the port Services conventionally target). Tests use `127.0.0.1:0`. */
  readonly bindAddress?: string;
  /** The serving certificate (chain) and its key, PEM. */
  readonly certificate: ServingKeyPair;
  /** Path → handler, e.g. `{ '/validate-crd-deletion': handler }`. */
  readonly handlers: Readonly<Record<string, AdmissionHandler>>;
  readonly logger?: Logger;
  /** Larger bodies are refused with 413. Default 7 MiB. */
  readonly maxBodyBytes?: number;
}

export interface AdmissionServer {
  readonly server: Server;
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** Serves new connections with another certificate, e.g. after renewal. */
  setCertificate(certificate: ServingKeyPair): void;
  /** Stops accepting, closes every connection and resolves once the server is closed. */
  close(): Promise<void>;
}

class BodyTooLargeError extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLargeError());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Starts the admission webhook server.
 *
 * @example
 * ```ts
 * const server = await startAdmissionServer({
 *   bindAddress: '127.0.0.1:0',
 *   certificate: { certPem, keyPem },
 *   handlers: { '/validate-crd-deletion': crdDeletionGuard(client) },
 * });
 * console.log(`https://127.0.0.1:${server.port}/validate-crd-deletion`);
 * await server.close();
 * ```
 */
export async function startAdmissionServer(options: AdmissionServerOptions): Promise<AdmissionServer> {
  const { host, port } = parseBindAddress(options.bindAddress ?? ':9443');
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const log = options.logger;
  const server = createServer({
    cert: options.certificate.certPem,
    key: options.certificate.keyPem,
    minVersion: 'TLSv1.2',
  });
  // The API server calls with its own timeout (at most 30 s); nothing legitimate takes longer.
  server.requestTimeout = 60_000;

  server.on('request', (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(`${text}\n`);
    const handler = Object.hasOwn(options.handlers, path) ? options.handlers[path] : undefined;
    if (!handler) return void plain(404, `no admission webhook at ${path}`);
    if (req.method !== 'POST') return void plain(405, 'admission webhooks take POST', { allow: 'POST' });
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      return void plain(415, 'an AdmissionReview must be sent as application/json');
    }
    const aborted = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) aborted.abort(new Error('the caller closed the connection'));
    });
    readBody(req, limit)
      .then(async (body) => {
        let review: ReturnType<typeof parseAdmissionReview>;
        try {
          review = parseAdmissionReview(body);
        } catch (error) {
          return plain(400, error instanceof Error ? error.message : String(error));
        }
        const { request } = review;
        let decision: AdmissionDecision;
        try {
          decision = await handler(request, aborted.signal);
        } catch (error) {
          log?.error({ err: error, path, uid: request.uid }, 'admission handler failed; refusing the request');
          decision = {
            allowed: false,
            code: 500,
            message: `${path} failed: ${error instanceof Error ? error.message : String(error)}`,
          };
        }
        const context = {
          path,
          uid: request.uid,
          operation: request.operation,
          resource: request.resource?.resource,
          name: request.name,
          user: request.userInfo?.username,
        };
        if (decision.allowed) log?.debug(context, 'admission allowed');
        else log?.info({ ...context, code: decision.code ?? 403, reason: decision.message }, 'admission refused');
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(buildAdmissionResponse(review, decision)));
      })
      .catch((error: unknown) => {
        if (res.headersSent) return;
        if (error instanceof BodyTooLargeError) {
          // Stop reading the rest: answer, then drop the connection rather than drain megabytes.
          res.once('finish', () => req.destroy());
          return plain(413, `an AdmissionReview may be at most ${limit} bytes`, { connection: 'close' });
        }
        log?.warn({ err: error, path }, 'admission request failed');
        if (!res.destroyed)
          plain(400, `could not read the request: ${error instanceof Error ? error.message : String(error)}`);
      });
  });
  // A client that resets mid-handshake or mid-request must not take the process down.
  server.on('tlsClientError', (error) => log?.debug({ err: error }, 'TLS handshake with an admission client failed'));
  server.on('clientError', (error, socket) => {
    log?.debug({ err: error }, 'bad admission request');
    socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => log?.error({ err: error }, 'admission server error'));

  return {
    server,
    port: (server.address() as AddressInfo).port,
    setCertificate(certificate) {
      server.setSecureContext({ cert: certificate.certPem, key: certificate.keyPem, minVersion: 'TLSv1.2' });
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
