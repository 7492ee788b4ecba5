import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { LABEL } from '../contract/index.js';
import { cloneSourceWakeups } from './clone-wakeups.js';

const cluster = (name: string, source?: string, namespace = 'db'): KubeObject =>
  ({
    apiVersion: 'postgres.kanri.dev/v1beta1',
    kind: 'PostgresCluster',
    metadata: { name, namespace },
    spec: source ? { dataSource: { postgresCluster: { clusterName: source, repoName: 'repo1' } } } : {},
  }) as KubeObject;
const pod = (name: string, of: string, namespace = 'db'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, labels: { [LABEL.cluster]: of } },
});

describe('a clone, and its Pods, wake its source (which grants them read access)', () => {
  it('maps a clone to its source, and a Pod of a clone seen to that source', () => {
    const wake = cloneSourceWakeups();
    assert.deepEqual(wake.pods(pod('copy-i-0', 'copy')), [], 'a clone not seen yet wakes nobody');
    assert.deepEqual(wake.clusters(cluster('copy', 'hippo')), [{ namespace: 'db', name: 'hippo' }]);
    assert.deepEqual(wake.pods(pod('copy-i-0', 'copy')), [{ namespace: 'db', name: 'hippo' }]);
    assert.deepEqual(wake.pods(pod('copy-i-0', 'copy', 'other')), [], 'another namespace’s cluster of that name');
    assert.deepEqual(wake.clusters(cluster('hippo')), [], 'a cluster that clones nothing');
    assert.deepEqual(wake.pods(pod('hippo-i-0', 'hippo')), []);
  });

  it('forgets a source once the cluster no longer names it', () => {
    const wake = cloneSourceWakeups();
    wake.clusters(cluster('copy', 'hippo'));
    assert.deepEqual(wake.clusters(cluster('copy')), []);
    assert.deepEqual(wake.pods(pod('copy-i-0', 'copy')), []);
  });
});
