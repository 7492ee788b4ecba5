// The run's skipped tests: printed with their reason, counted, and a real-node test skipped on a
// machine that can run real nodes fails the run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isRealNodeTest, judgeSkips, skipReason } from './test-skips.mjs';

const REAL = {
  file: '/repo/packages/postgres/dist/test/real-nodes.test.js',
  name: 'the operator and PostgreSQL on real nodes, from their Dockerfile and the Helm chart',
  reason: 'real nodes need root (namespaces, cgroups and routes); testenv runs as a user',
};
const OTHER = {
  file: '/repo/packages/testenv/dist/src/binaries/ensure-node-tools.test.js',
  name: 'ensureNodeTools',
  reason: 'the pinned packages are amd64 only',
};

describe('skipped tests', () => {
  it('prints each with its file, name and reason, and counts them', () => {
    const { count, lines, failures } = judgeSkips([REAL, OTHER], { root: '/repo', realNodesExpected: false });
    assert.equal(count, 2);
    assert.deepEqual(lines, [
      'packages/postgres/dist/test/real-nodes.test.js › the operator and PostgreSQL on real nodes, from their Dockerfile and the Helm chart: real nodes need root (namespaces, cgroups and routes); testenv runs as a user',
      'packages/testenv/dist/src/binaries/ensure-node-tools.test.js › ensureNodeTools: the pinned packages are amd64 only',
    ]);
    assert.deepEqual(failures, [], 'a machine without real nodes may skip them');
  });

  it('fails a real-node test skipped where real nodes can run, whatever the reason', () => {
    const nsenter = {
      ...REAL,
      reason: 'real nodes need `nsenter` (iproute2 / util-linux / procps), which is not on PATH',
    };
    const { failures } = judgeSkips([nsenter, OTHER], { root: '/repo', realNodesExpected: true });
    assert.equal(failures.length, 1);
    assert.match(failures[0], /real-nodes\.test\.js › .*: real nodes need `nsenter`/);
  });

  it('knows a real-node test by its file or by its reason', () => {
    assert.ok(isRealNodeTest(REAL));
    assert.ok(
      isRealNodeTest({ file: '/r/packages/postgres/dist/test/failover-reclone-real.test.js', name: 'x', reason: 'y' }),
    );
    assert.ok(isRealNodeTest({ file: '/r/examples/dist/04-real-nodes/main.test.js', name: 'x', reason: 'y' }));
    assert.ok(isRealNodeTest({ file: '/r/a.test.js', name: 'x', reason: 'real nodes need Linux; this is darwin' }));
    assert.ok(!isRealNodeTest(OTHER));
  });

  it('says when a skip gave no reason', () => {
    assert.equal(skipReason(true), '(no reason given)');
    assert.equal(skipReason('x'), 'x');
  });
});
