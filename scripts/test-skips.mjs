// What the test run skipped, pure: every skipped test with its reason (the run's reporter records
// them, scripts/test-run-reporter.mjs), counted for the run's summary, and which of them fail the
// run. A machine that runs as root and has the real nodes' tools installed (the bootstrap's
// `kanri testenv install` fetches them) is one where the real-node tests must run: a skip there,
// whatever its reason, means real nodes went untested where they could have been, and fails.
import { relative } from 'node:path';

/** A real-node test: its file runs real nodes (kubelet, containerd), or it was skipped for their sake. */
export const isRealNodeTest = (skip) =>
  /real-nodes?\b|-real\.test\./.test(skip.file ?? '') || /\breal nodes\b/.test(skip.reason);

/**
 * The lines the runner prints, one per skipped test (`file › test: reason`), and the failures:
 * the real-node tests skipped where `realNodesExpected`. A skipped suite counts once (its tests
 * never ran, so none of them was reported).
 *
 * @example
 * judgeSkips([{ file: '/r/a.test.js', name: 'x', reason: 'real nodes need root' }], { root: '/r', realNodesExpected: true });
 * // { count: 1, lines: ['a.test.js › x: real nodes need root'], failures: ['a.test.js › x: real nodes need root'] }
 */
export function judgeSkips(skips, { root, realNodesExpected }) {
  const line = (s) => `${s.file ? relative(root, s.file) : '?'} › ${s.name}: ${s.reason}`;
  const lines = skips.map(line);
  const failures = realNodesExpected ? skips.filter(isRealNodeTest).map(line) : [];
  return { count: skips.length, lines, failures };
}

/** The reason node:test gives for a skip: the string passed, or none given. */
export const skipReason = (skip) => (typeof skip === 'string' && skip ? skip : '(no reason given)');
