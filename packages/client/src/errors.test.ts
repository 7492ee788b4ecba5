import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AlreadyExistsError,
  ConflictError,
  errorFromResponse,
  ForbiddenError,
  GoneError,
  InvalidError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
} from './errors.js';

const request = { method: 'GET', path: '/api/v1/namespaces/default/configmaps', verb: 'list', resource: 'configmaps' };
const status = (code: number, reason: string, extra: object = {}) => ({
  kind: 'Status',
  code,
  reason,
  message: `${reason}!`,
  ...extra,
});

describe('errorFromResponse', () => {
  it('maps each reason to its class', () => {
    assert.ok(errorFromResponse(404, status(404, 'NotFound'), request) instanceof NotFoundError);
    assert.ok(errorFromResponse(409, status(409, 'AlreadyExists'), request) instanceof AlreadyExistsError);
    assert.ok(errorFromResponse(409, status(409, 'Conflict'), request) instanceof ConflictError);
    assert.ok(errorFromResponse(410, status(410, 'Expired'), request) instanceof GoneError);
    assert.ok(errorFromResponse(500, status(500, 'InternalError'), request) instanceof ServerError);
    assert.ok(errorFromResponse(504, status(504, 'Timeout'), request) instanceof TimeoutError);
    assert.ok(errorFromResponse(502, '<html>bad gateway</html>', request) instanceof ServerError);
  });

  it('says what was forbidden', () => {
    const error = errorFromResponse(403, status(403, 'Forbidden'), request);
    assert.ok(error instanceof ForbiddenError);
    assert.equal(error.verb, 'list');
    assert.equal(error.resource, 'configmaps');
    assert.match(error.message, /^list configmaps: Forbidden!/);
  });

  it('keeps the field causes of an invalid object', () => {
    const causes = [{ reason: 'FieldValueRequired', field: 'spec.size', message: 'Required value' }];
    const error = errorFromResponse(422, status(422, 'Invalid', { details: { causes } }), request);
    assert.ok(error instanceof InvalidError);
    assert.deepEqual(error.causes, causes);
  });

  it('reads Retry-After from the header, else from the status details', () => {
    const fromHeader = errorFromResponse(429, status(429, 'TooManyRequests'), request, '7');
    assert.ok(fromHeader instanceof TooManyRequestsError);
    assert.equal(fromHeader.retryAfterSeconds, 7);
    const fromDetails = errorFromResponse(
      429,
      status(429, 'TooManyRequests', { details: { retryAfterSeconds: 3 } }),
      request,
    );
    assert.equal((fromDetails as TooManyRequestsError).retryAfterSeconds, 3);
  });
});
