import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease } from '@kanri/runtime';
import { API_VERSION, KIND, LABEL } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { historyRefusal, leaseMetadataFor } from './leader-history.js';

// Only what historyRefusal and leaseMetadataFor read: the cluster's name and the cached cluster.
const contextWith = (cluster: { metadata: { uid: string } } | undefined) =>
  ({ config: { cluster: 'zoo', podName: 'zoo-a-0' }, view: { cluster } }) as unknown as AgentContext;

describe('the leader Lease and its owner', () => {
  it('refuses to create the Lease while the cache lacks the cluster, as nothing would collect it', async () => {
    const refusal = await historyRefusal(contextWith(undefined), undefined);
    assert.match(refusal ?? '', /cluster zoo is not in the cache: not creating its leader Lease without its owner/);
  });

  it('creates the Lease owned by the cached cluster, without blocking the cluster’s deletion', async () => {
    const ctx = contextWith({ metadata: { uid: 'u-1' } });
    assert.equal(await historyRefusal(ctx, undefined), undefined);
    assert.deepEqual(leaseMetadataFor(ctx), {
      labels: { [LABEL.cluster]: 'zoo' },
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: 'zoo', uid: 'u-1', blockOwnerDeletion: false }],
    });
  });

  it('takes over an existing Lease without a recorded history even when the cache lacks the cluster', async () => {
    const lease = { metadata: { name: 'zoo-leader', annotations: {} } } as Lease;
    assert.equal(await historyRefusal(contextWith(undefined), lease), undefined);
  });
});
