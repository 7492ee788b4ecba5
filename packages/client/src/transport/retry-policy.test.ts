import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideRetry } from './retry-policy.js';

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

  it('backs off exponentially from 100 ms up to 5 s, jittered down by at most a fifth', () => {
    const delay = (attempt: number, random: () => number) =>
      decideRetry({ method: 'GET', statusCode: 503, attempt, maxAttempts: 100, random }).delayMs;
    const top = () => 0.999999;
    assert.deepEqual(
      [1, 2, 4, 20].map((attempt) => delay(attempt, top)),
      [100, 200, 800, 5000],
    );
    assert.deepEqual(
      [1, 2, 4, 20].map((attempt) => delay(attempt, () => 0)),
      [80, 160, 640, 4000],
    );
  });
});
