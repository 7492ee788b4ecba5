import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay, decideRetry } from './retry-policy.js';

const base = { attempt: 1, maxAttempts: 5, random: () => 0.5 };

describe('decideRetry', () => {
  it('retries 429 for any verb, honouring Retry-After', () => {
    assert.deepEqual(decideRetry({ ...base, method: 'POST', statusCode: 429, retryAfterSeconds: 2 }), {
      retry: true,
      delayMs: 2000,
    });
  });

  it('retries server errors and broken connections only for reads', () => {
    assert.equal(decideRetry({ ...base, method: 'GET', statusCode: 503 }).retry, true);
    assert.equal(decideRetry({ ...base, method: 'POST', statusCode: 503 }).retry, false);
    assert.equal(decideRetry({ ...base, method: 'GET', errorCode: 'ECONNRESET' }).retry, true);
    assert.equal(decideRetry({ ...base, method: 'PATCH', errorCode: 'ECONNRESET' }).retry, false);
  });

  it('retries any verb when the connection was refused, since nothing was sent', () => {
    assert.equal(decideRetry({ ...base, method: 'DELETE', errorCode: 'ECONNREFUSED' }).retry, true);
  });

  it('never retries client errors or past the attempt limit', () => {
    assert.equal(decideRetry({ ...base, method: 'GET', statusCode: 409 }).retry, false);
    assert.equal(decideRetry({ ...base, method: 'GET', statusCode: 404 }).retry, false);
    assert.equal(decideRetry({ ...base, attempt: 5, method: 'GET', statusCode: 503 }).retry, false);
  });

  it('backs off exponentially up to a cap', () => {
    const mid = () => 0.5;
    assert.equal(backoffDelay(1, mid), 100);
    assert.equal(backoffDelay(2, mid), 200);
    assert.equal(backoffDelay(4, mid), 800);
    assert.equal(backoffDelay(20, mid), 5000);
  });
});
