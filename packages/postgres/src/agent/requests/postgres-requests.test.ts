import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PostgresRequests } from './postgres-requests.js';

describe('PostgresRequests', () => {
  it('hands a reload over once, and wakes the cycle for every new request', () => {
    let wakes = 0;
    const requests = new PostgresRequests(() => wakes++);
    assert.equal(requests.take(), undefined, 'nothing asked, nothing to serve');
    requests.requestReload('the cluster configuration changed');
    assert.equal(wakes, 1);
    assert.equal(requests.pending, true);
    assert.deepEqual(requests.take(), { kind: 'reload', reasons: ['the cluster configuration changed'] });
    assert.equal(requests.pending, false);
    assert.equal(requests.take(), undefined, 'served once');
  });

  it('coalesces reloads asked before a take into one, naming each reason once', () => {
    const requests = new PostgresRequests();
    requests.requestReload('the cluster configuration changed');
    requests.requestReload('the TLS certificates changed');
    requests.requestReload('the cluster configuration changed');
    assert.deepEqual(requests.take(), {
      kind: 'reload',
      reasons: ['the cluster configuration changed', 'the TLS certificates changed'],
    });
    requests.requestReload('the TLS certificates changed');
    assert.deepEqual(
      requests.take(),
      { kind: 'reload', reasons: ['the TLS certificates changed'] },
      'a reload asked after a take is served by the next one',
    );
  });

  it('serves the reloads with a restart, asked before or after it', () => {
    const requests = new PostgresRequests();
    requests.requestReload('the cluster configuration changed');
    requests.requestRestart('t1', 'the operator asked for a restart');
    requests.requestReload('the TLS certificates changed');
    assert.deepEqual(requests.take(), {
      kind: 'restart',
      token: 't1',
      reasons: [
        'the cluster configuration changed',
        'the operator asked for a restart',
        'the TLS certificates changed',
      ],
    });
    assert.equal(requests.take(), undefined, 'no reload left after the restart');
  });

  it('keeps the newest restart token, and does not wake again for the one pending', () => {
    let wakes = 0;
    const requests = new PostgresRequests(() => wakes++);
    requests.requestRestart('t1', 'the operator asked for a restart');
    requests.requestRestart('t1', 'the operator asked for a restart');
    assert.equal(wakes, 1, 'the same token again is no news');
    requests.requestRestart('t2', 'the operator asked for a restart');
    assert.equal(wakes, 2);
    assert.deepEqual(requests.take(), { kind: 'restart', token: 't2', reasons: ['the operator asked for a restart'] });
  });

  it('takes back a request not served, behind a newer restart token', () => {
    let wakes = 0;
    const requests = new PostgresRequests(() => wakes++);
    requests.requestRestart('t1', 'the operator asked for a restart');
    const taken = requests.take();
    assert.ok(taken);
    requests.requestReload('the TLS certificates changed');
    wakes = 0;
    requests.retryLater(taken);
    assert.equal(wakes, 0, 'served at the next lap, not at once');
    assert.deepEqual(requests.take(), {
      kind: 'restart',
      token: 't1',
      reasons: ['the operator asked for a restart', 'the TLS certificates changed'],
    });
    requests.requestRestart('t1', 'the operator asked for a restart');
    const old = requests.take();
    assert.ok(old);
    requests.requestRestart('t2', 'the operator asked for a restart');
    requests.retryLater(old);
    assert.deepEqual(
      requests.take(),
      { kind: 'restart', token: 't2', reasons: ['the operator asked for a restart'] },
      'the newer token stays',
    );
  });
});
