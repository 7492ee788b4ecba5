import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, ANNOTATION_PGBACKREST_KEY, type InstanceReport, LABEL } from '../../contract/index.js';
import { REPORT_FIELDS_READ } from '../cluster-status.js';
import { instancePodChanged, instancePodPredicate } from './pod-predicate.js';

const nowMs = Date.parse('2026-11-29T12:00:00Z');
const report: InstanceReport = {
  role: 'replica',
  ready: true,
  timeline: 1,
  systemIdentifier: '742',
  receivedLsn: '0/3000000',
  replayedLsn: '0/3000000',
  lagBytes: 0,
  updatedAt: new Date(nowMs - 5_000).toISOString(),
};
const pod = (change: Partial<InstanceReport> = {}, edit: (p: Pod) => Pod = (p) => p): Pod =>
  edit({
    metadata: {
      name: 'db-i-1',
      labels: { [LABEL.role]: 'replica', [LABEL.instance]: 'db-i-1' },
      annotations: { [ANNOTATION.status]: JSON.stringify({ ...report, ...change }) },
      ownerReferences: [
        { apiVersion: 'postgres.kanri.dev/v1', kind: 'PostgresCluster', name: 'db', uid: 'u1', controller: true },
      ],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  });
const changed = (old: Pod, next: Pod) => instancePodChanged(old, next, nowMs);

describe('instancePodChanged', () => {
  it('ignores a report rewrite that moves only what the operator does not read', () => {
    const later = { updatedAt: new Date(nowMs - 1_000).toISOString() };
    assert.equal(changed(pod(), pod({ ...later, receivedLsn: '0/4000000', replayedLsn: '0/4000000' })), false);
    assert.equal(changed(pod(), pod({ ...later, failover: 'waiting', switchover: 'x', rejoin: 'y' })), false);
    // Free space moves with every write: only a step of 5% of the volume wakes auto-grow.
    const volume = (availableBytes: number) => ({ dataVolume: { sizeBytes: 1000 * 2 ** 20, availableBytes } });
    assert.equal(changed(pod(volume(500 * 2 ** 20)), pod({ ...later, ...volume(480 * 2 ** 20) })), false);
    assert.equal(changed(pod(volume(500 * 2 ** 20)), pod({ ...later, ...volume(440 * 2 ** 20) })), true);
  });

  it('passes a change of every report field the operator reads', () => {
    const changes: Record<(typeof REPORT_FIELDS_READ)[number], Partial<InstanceReport>> = {
      role: { role: 'primary' },
      ready: { ready: false },
      timeline: { timeline: 2 },
      lagBytes: { lagBytes: 4096 },
      systemIdentifier: { systemIdentifier: '743' },
      serverVersion: { serverVersion: '16.15' },
      pendingRestart: { pendingRestart: [{ name: 'shared_buffers', running: '2048', wanted: '32MB' }] },
      controlLimits: { controlLimits: { max_connections: 40 } },
      restartServed: { restartServed: 'r1' },
      switchoverServed: { switchoverServed: 't1' },
      configHash: { configHash: 'c0ffee' },
      peerKey: { peerKey: '-----BEGIN PUBLIC KEY-----\nnew\n-----END PUBLIC KEY-----\n' },
      message: { message: 'cannot reach the primary' },
      backups: { backups: { stanza: 'failed: stanza-create failed' } },
      restore: { restore: { id: 'clone', result: 'failed', reason: 'x' } },
      diskFull: { diskFull: 'the data volume is full: 0.2 MiB free of 128.0 MiB' },
      users: { users: { generation: 3, removed: [{ name: 'old', reason: 'owns database "old"' }] } },
      dataVolume: { dataVolume: { sizeBytes: 2 ** 30, availableBytes: 2 ** 29 } },
      databaseInitSQL: {
        databaseInitSQL: {
          configMap: 'init',
          key: 'init.sql',
          sha256: 'ab',
          result: 'Failed',
          message: 'psql exited with code 3',
          finishedAt: '2026-12-07T00:00:00.000Z',
        },
      },
    };
    assert.deepEqual(Object.keys(changes).sort(), [...REPORT_FIELDS_READ].sort());
    for (const [field, change] of Object.entries(changes)) {
      assert.equal(changed(pod(), pod(change)), true, field);
    }
  });

  it('passes the archive starting to fail, but not a newer archived segment', () => {
    const archiving = (archive: Record<string, string>) => pod({ backups: { stanza: 'created', archive } });
    const ok = archiving({ lastArchivedWal: 'A', lastArchivedTime: '2026-12-01T10:00:00Z' });
    assert.equal(changed(ok, archiving({ lastArchivedWal: 'B', lastArchivedTime: '2026-12-01T10:00:05Z' })), false);
    const failing = archiving({
      lastArchivedTime: '2026-12-01T10:00:00Z',
      lastFailedWal: 'B',
      lastFailedTime: '2026-12-01T10:00:09Z',
    });
    assert.equal(changed(ok, failing), true);
  });

  it('passes labels, owner, phase, Pod IP, deletion, readiness and scheduling changes, and a report appearing or going', () => {
    const edits: Record<string, (p: Pod) => Pod> = {
      label: (p) => ({ ...p, metadata: { ...p.metadata, labels: { ...p.metadata?.labels, [LABEL.role]: 'primary' } } }),
      owner: (p) => ({ ...p, metadata: { ...p.metadata, ownerReferences: [] } }),
      phase: (p) => ({ ...p, status: { ...p.status, phase: 'Failed' } }),
      'pod IP': (p) => ({ ...p, status: { ...p.status, podIP: '10.0.0.7' } }),
      deletion: (p) => ({ ...p, metadata: { ...p.metadata, deletionTimestamp: '2026-11-29T12:00:00Z' } }),
      readiness: (p) => ({ ...p, status: { ...p.status, conditions: [{ type: 'Ready', status: 'False' }] } }),
      'report gone': (p) => ({ ...p, metadata: { ...p.metadata, annotations: {} } }),
      unschedulable: (p) => ({
        ...p,
        status: {
          ...p.status,
          conditions: [
            ...(p.status?.conditions ?? []),
            { type: 'PodScheduled', status: 'False', reason: 'Unschedulable' },
          ],
        },
      }),
    };
    for (const [what, edit] of Object.entries(edits)) {
      assert.equal(changed(pod(), pod({}, edit)), true, what);
      assert.equal(changed(pod({}, edit), pod()), true, `${what}, reversed`);
    }
  });

  it('passes a refresh of a report that had gone stale, since the instance counts again', () => {
    const stale = pod({ updatedAt: new Date(nowMs - 31_000).toISOString() });
    assert.equal(changed(stale, pod()), true);
  });
});

describe('instancePodPredicate', () => {
  it('wakes the controller when the repo host (a Pod without a report) gets its IP, and not for its other updates', () => {
    const predicate = instancePodPredicate({ now: () => nowMs });
    const repoHost = (podIP?: string, annotations: Record<string, string> = {}) =>
      ({
        metadata: { name: 'db-repo-host', labels: { [LABEL.cluster]: 'db' }, annotations },
        status: { phase: 'Pending', ...(podIP ? { podIP } : {}) },
      }) as KubeObject;
    assert.equal(predicate({ type: 'updated', old: repoHost(), object: repoHost('10.0.0.9') }), true);
    assert.equal(
      predicate({ type: 'updated', old: repoHost('10.0.0.9'), object: repoHost('10.0.0.9', { note: 'x' }) }),
      false,
    );
  });

  it('wakes the controller when a Pod publishes its pgBackRest key, to certify it (issue 37, finding 4)', () => {
    const predicate = instancePodPredicate({ now: () => nowMs });
    const repoHost = (annotations: Record<string, string> = {}) =>
      ({
        metadata: { name: 'db-repo-host', labels: { [LABEL.cluster]: 'db' }, annotations },
        status: { phase: 'Running', podIP: '10.0.0.9' },
      }) as KubeObject;
    const key = { [ANNOTATION_PGBACKREST_KEY]: 'spki' };
    assert.equal(predicate({ type: 'updated', old: repoHost(), object: repoHost(key) }), true);
    assert.equal(
      predicate({ type: 'updated', old: repoHost(key), object: repoHost({ [ANNOTATION_PGBACKREST_KEY]: 'new' }) }),
      true,
    );
    assert.equal(predicate({ type: 'updated', old: repoHost(key), object: repoHost(key) }), false);
  });

  it('lets adds and deletes through and filters updates by the same rule', () => {
    const predicate = instancePodPredicate({ now: () => nowMs });
    const o = (p: Pod) => p as KubeObject;
    assert.equal(predicate({ type: 'added', object: o(pod()) }), true);
    assert.equal(predicate({ type: 'deleted', object: o(pod()) }), true);
    assert.equal(predicate({ type: 'updated', old: o(pod()), object: o(pod({ receivedLsn: '0/5000000' })) }), false);
    assert.equal(predicate({ type: 'updated', old: o(pod()), object: o(pod({ ready: false })) }), true);
  });
});
