import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ignoreNotFound, isAlreadyExists, isConflict, isNotFound } from './error-predicates.js';
import { errorFromResponse } from './errors.js';

const request = { method: 'DELETE', path: '/api/v1/namespaces/default/pods/web-0', verb: 'delete', resource: 'pods' };
const failure = (code: number, reason: string) =>
  errorFromResponse(code, { kind: 'Status', code, reason, message: reason }, request);

describe('error predicates', () => {
  it('answer by class, not by the Status object in `status`', () => {
    const notFound = failure(404, 'NotFound');
    const alreadyExists = failure(409, 'AlreadyExists');
    const conflict = failure(409, 'Conflict');
    assert.deepEqual(
      [notFound, alreadyExists, conflict].map((e) => [isNotFound(e), isAlreadyExists(e), isConflict(e)]),
      [
        [true, false, false],
        [false, true, false],
        [false, false, true],
      ],
    );
    for (const other of [failure(403, 'Forbidden'), new Error('boom'), undefined, { statusCode: 404 }, 404]) {
      assert.equal(isNotFound(other) || isAlreadyExists(other) || isConflict(other), false);
    }
  });
});

describe('ignoreNotFound', () => {
  it('resolves a promise that rejected with NotFound to undefined and keeps a value', async () => {
    assert.equal(await ignoreNotFound(Promise.reject(failure(404, 'NotFound'))), undefined);
    assert.equal(await ignoreNotFound(Promise.resolve('kept')), 'kept');
  });

  it('passes every other rejection through unchanged', async () => {
    const forbidden = failure(403, 'Forbidden');
    await assert.rejects(ignoreNotFound(Promise.reject(forbidden)), (error) => error === forbidden);
    const conflict = failure(409, 'Conflict');
    await assert.rejects(ignoreNotFound(Promise.reject(conflict)), (error) => error === conflict);
  });

  it('works as a catch handler: swallows NotFound, rethrows the rest', async () => {
    assert.equal(await Promise.reject(failure(404, 'NotFound')).catch(ignoreNotFound), undefined);
    const plain = new Error('boom');
    assert.throws(
      () => ignoreNotFound(plain),
      (error) => error === plain,
    );
  });
});
