import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { CredentialSource } from '../config/credentials.js';
import { ServerError, TooManyRequestsError } from '../errors.js';
import { HttpTransport } from './http-transport.js';

type Handler = (req: IncomingMessage, res: ServerResponse, count: number) => void;

/** A plain HTTP server on loopback that answers with whatever the current test scripts. */
describe('HttpTransport retries', () => {
  let handler: Handler = () => {};
  let count = 0;
  let server: ReturnType<typeof createServer>;
  let origin: string;
  before(async () => {
    server = createServer((req, res) => {
      count++;
      req.resume();
      req.on('end', () => handler(req, res, count));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const transport = (credentials?: CredentialSource, maxAttempts = 5) =>
    new HttpTransport(
      { server: origin, namespace: 'default', source: 'test', tls: { rejectUnauthorized: true }, credentials },
      { maxAttempts },
    );
  const status = (res: ServerResponse, code: number, reason: string, headers: Record<string, string> = {}) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ kind: 'Status', code, reason, message: reason }));
  };

  it('waits for Retry-After after a 429 and then succeeds, even for a write', async () => {
    count = 0;
    handler = (_req, res, n) =>
      n === 1 ? status(res, 429, 'TooManyRequests', { 'retry-after': '1' }) : res.end('{"ok":true}');
    const t = transport();
    const started = Date.now();
    assert.deepEqual(await t.json({ method: 'POST', path: '/x', body: {} }), { ok: true });
    assert.ok(Date.now() - started >= 950, 'honoured Retry-After: 1');
    assert.equal(count, 2);
    await t.close();
  });

  it('gives up on 429 after the attempt limit with TooManyRequestsError', async () => {
    count = 0;
    handler = (_req, res) => status(res, 429, 'TooManyRequests', { 'retry-after': '0' });
    const t = transport(undefined, 3);
    await assert.rejects(t.json({ method: 'GET', path: '/x' }), TooManyRequestsError);
    assert.equal(count, 3);
    await t.close();
  });

  it('retries a 503 for a read but not for a write', async () => {
    count = 0;
    handler = (_req, res, n) => (n === 1 ? status(res, 503, 'ServiceUnavailable') : res.end('{"ok":true}'));
    const t = transport();
    assert.deepEqual(await t.json({ method: 'GET', path: '/x' }), { ok: true });
    count = 0;
    handler = (_req, res) => status(res, 503, 'ServiceUnavailable');
    await assert.rejects(t.json({ method: 'POST', path: '/x', body: {} }), ServerError);
    assert.equal(count, 1, 'the write was sent once');
    await t.close();
  });

  it('fetches fresh credentials once after a 401', async () => {
    count = 0;
    let tokens = 0;
    let invalidated = 0;
    const credentials: CredentialSource = {
      current: async () => ({ token: `t${++tokens}` }),
      invalidate: () => {
        invalidated++;
      },
    };
    handler = (req, res) =>
      req.headers.authorization === 'Bearer t1' ? status(res, 401, 'Unauthorized') : res.end('{"ok":true}');
    const t = transport(credentials);
    assert.deepEqual(await t.json({ method: 'GET', path: '/x' }), { ok: true });
    assert.equal(invalidated, 1);
    assert.equal(count, 2);
    await t.close();
  });
});
