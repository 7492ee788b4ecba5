/**
 * `failover-reclone.test.ts` on real nodes (KANRI_FAILOVER_NODES=real): the one failover file CI
 * runs on real nodes, so that a failover across a real node's power-off (kubelet, containerd and
 * kube-proxy gone at once, the Pod's address silent) is tested on every run, not only by hand. It
 * is the cheapest that still loses a host: 2 instances, one power loss, a 6 s lease, and the
 * former primary re-cloned when its node comes back. Where real nodes cannot run it is skipped
 * with the reason; scripts/run-tests.mjs fails the run for that skip on a root machine with the
 * node tools installed.
 */
import { describe, it } from 'node:test';
import { realNodesUnsupportedReason } from '@kanri/testenv';
import { FAILOVER_NODES_VARIABLE } from './support/failover-env.js';

const unsupported = await realNodesUnsupportedReason();
if (unsupported) {
  describe('a former primary that pg_rewind cannot bring back is re-cloned, on real nodes', {
    skip: unsupported,
  }, () => {
    it('runs only where real nodes can', () => {});
  });
} else {
  // Read by startFailoverEnv when the suite's `before` runs, in this file's own process.
  process.env[FAILOVER_NODES_VARIABLE] = 'real';
  await import('./failover-reclone.test.js');
}
