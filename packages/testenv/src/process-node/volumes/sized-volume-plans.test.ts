import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { buildClaimEvent } from './claim-event.js';
import { planExpansion } from './expansion-plan.js';
import { parseMountInfo } from './host-mounts/mount-table.js';
import { chooseSizedVolumeBackend } from './host-mounts/sized-support.js';
import { tmpfsMountAt, tmpfsMountOptions, tmpfsRemountOptions } from './host-mounts/tmpfs-volume.js';
import { buildStorageClass, buildVolumeForClaim } from './provisioner.js';
import {
  resizeFailedStatus,
  resizeFinishedAnnotations,
  resizeFinishedStatus,
  resizeStarted,
  resizeStartedAnnotations,
  resizeStartedStatus,
} from './resize-status.js';
import { RetryBackoff } from './retry-backoff.js';
import { backendOfVolume, buildSizedStorageClass, SIZED_STORAGE_CLASS, volumeKindOf } from './sized-class.js';
import { planSizedVolume, quantityBytes, volumeCapacity } from './volume-size.js';

describe('the sized StorageClass', () => {
  it('is a second, expandable, non-default class of the same provisioner, marked loop', () => {
    const sized = buildSizedStorageClass(SIZED_STORAGE_CLASS, true);
    const plain = buildStorageClass('kanri-local');
    assert.equal(sized.provisioner, plain.provisioner);
    assert.deepEqual(sized.metadata, { name: 'kanri-sized' });
    assert.equal(sized.allowVolumeExpansion, true);
    assert.equal(sized.volumeBindingMode, 'WaitForFirstConsumer');
    assert.equal(buildSizedStorageClass('s').volumeBindingMode, 'Immediate');
    assert.equal(volumeKindOf(sized.parameters as Record<string, string>), 'loop');
    assert.equal(volumeKindOf(plain.parameters as Record<string, string> | undefined), 'directory');
    assert.equal(volumeKindOf({ 'kanri.dev/volume': 'tmpfs' }), 'directory');
  });
});

describe('sized volume sizes', () => {
  it('rounds a request up to whole MiB', () => {
    assert.deepEqual(planSizedVolume('64Mi'), { mib: 64 });
    assert.deepEqual(planSizedVolume('100M'), { mib: 96 }); // 95.37 MiB
    assert.deepEqual(planSizedVolume('1Gi'), { mib: 1024 });
    assert.deepEqual(planSizedVolume('16777217'), { mib: 17 }); // one byte over 16 MiB
    assert.deepEqual(planSizedVolume('15.5Mi'), { mib: 16 });
    assert.deepEqual(planSizedVolume('0.5Gi'), { mib: 512 });
  });

  it('refuses below 16 MiB, and a missing or invalid request, saying why', () => {
    const small = planSizedVolume('8Mi');
    assert.ok('refused' in small && /8Mi \(8 MiB\).*at least 16 MiB/.test(small.refused), JSON.stringify(small));
    assert.ok('refused' in planSizedVolume('15Mi'));
    assert.ok('refused' in planSizedVolume(undefined));
    assert.ok('refused' in planSizedVolume('lots'));
    assert.ok('refused' in planSizedVolume('-1Gi'));
  });

  it('reads quantities as bytes, rounded up', () => {
    assert.equal(quantityBytes('1Ki'), 1024n);
    assert.equal(quantityBytes('1500m'), 2n);
    assert.equal(quantityBytes('2e3'), 2000n);
    assert.equal(quantityBytes('x'), undefined);
    assert.equal(quantityBytes(undefined), undefined);
  });

  it('records a sized volume at its real size and a directory at its request', () => {
    assert.equal(volumeCapacity('loop', '100M'), '96Mi');
    assert.equal(volumeCapacity('directory', '100M'), '100M');
    assert.equal(volumeCapacity('loop', '1Mi'), undefined);
  });

  it('builds a sized PersistentVolume that must find its mount, and a directory one as before', () => {
    const claim: PersistentVolumeClaim = {
      metadata: { name: 'data', namespace: 'shop', uid: 'c-1' },
      spec: { resources: { requests: { storage: '100M' } } },
    };
    const sized = buildVolumeForClaim(claim, 'kanri-sized', '/tmp/v/pvc-c-1', { capacity: '96Mi', backend: 'tmpfs' });
    assert.deepEqual(sized.spec?.hostPath, { path: '/tmp/v/pvc-c-1', type: 'Directory' });
    assert.equal(sized.spec?.capacity?.storage, '96Mi');
    assert.equal(sized.metadata?.annotations?.['kanri.dev/volume'], 'loop');
    assert.equal(sized.metadata?.annotations?.['kanri.dev/volume-backend'], 'tmpfs');
    assert.equal(backendOfVolume(sized.metadata?.annotations), 'tmpfs');
    const ext4 = buildVolumeForClaim(claim, 'kanri-sized', '/tmp/v/pvc-c-1', {
      capacity: '96Mi',
      backend: 'ext4-loop',
    });
    assert.equal(ext4.metadata?.annotations?.['kanri.dev/volume-backend'], 'ext4-loop');
    assert.equal(backendOfVolume(ext4.metadata?.annotations), 'ext4-loop');
    // A volume made before the annotation existed is ext4 on a loop device.
    assert.equal(backendOfVolume({ 'kanri.dev/volume': 'loop' }), 'ext4-loop');
    assert.equal(backendOfVolume(undefined), 'ext4-loop');
    const plain = buildVolumeForClaim(claim, 'kanri-local', '/tmp/v/pvc-c-1');
    assert.deepEqual(plain.spec?.hostPath, { path: '/tmp/v/pvc-c-1', type: 'DirectoryOrCreate' });
    assert.equal(plain.spec?.capacity?.storage, '100M');
    assert.equal(plain.metadata?.annotations?.['kanri.dev/volume'], undefined);
    assert.equal(plain.metadata?.annotations?.['kanri.dev/volume-backend'], undefined);
  });
});

describe('the sized volumes’ backend', () => {
  it('is ext4 on a loop device where it grows online, else tmpfs, else none, saying why', () => {
    assert.deepEqual(chooseSizedVolumeBackend({ ext4Loop: undefined, tmpfs: undefined }).backend, 'ext4-loop');
    const noCap = 'growing a mounted ext4 filesystem needs CAP_SYS_RESOURCE, which this machine withholds from root';
    const tmpfs = chooseSizedVolumeBackend({ ext4Loop: noCap, tmpfs: undefined });
    assert.equal(tmpfs.backend, 'tmpfs');
    assert.equal(tmpfs.reason, `ext4 on a loop device cannot grow online here: ${noCap}`);
    const none = chooseSizedVolumeBackend({ ext4Loop: 'needs root', tmpfs: 'sized volumes need root (mounts)' });
    assert.deepEqual(none, { backend: undefined, reason: 'sized volumes need root (mounts)' });
  });

  it('mounts a tmpfs of the exact size, root’s alone, and grows it by a remount', () => {
    assert.equal(tmpfsMountOptions(64n << 20n), 'size=67108864,mode=0700');
    assert.equal(tmpfsRemountOptions(128n << 20n), 'remount,size=134217728');
  });

  it('finds a tmpfs volume by the top mount on its path', () => {
    const entries = parseMountInfo(
      [
        '36 35 254:0 / /v/pvc-1 rw - ext4 /dev/vda rw',
        '40 36 0:41 / /v/pvc-1 rw,relatime - tmpfs tmpfs rw,size=65536k,mode=700',
        '41 35 0:42 / /v/pvc-2 rw - tmpfs tmpfs rw',
        '42 41 7:3 / /v/pvc-2 rw - ext4 /dev/loop3 rw',
      ].join('\n'),
    );
    assert.equal(tmpfsMountAt(entries, '/v/pvc-1')?.device, '0:41');
    assert.equal(tmpfsMountAt(entries, '/v/pvc-2'), undefined, 'hidden under an ext4 mount');
    assert.equal(tmpfsMountAt(entries, '/v/pvc-3'), undefined);
  });
});

const boundClaim = (request: string, capacity: string, extra: Partial<PersistentVolumeClaim['status']> = {}) =>
  ({
    metadata: { name: 'data', namespace: 'shop', uid: 'c-1', resourceVersion: '42' },
    spec: { volumeName: 'pvc-c-1', resources: { requests: { storage: request } } },
    status: { phase: 'Bound', capacity: { storage: capacity }, ...extra },
  }) satisfies PersistentVolumeClaim;
const volumeOf = (capacity: string, phase = 'Bound'): PersistentVolume => ({
  metadata: { name: 'pvc-c-1' },
  spec: { capacity: { storage: capacity }, claimRef: { uid: 'c-1' } },
  status: { phase },
});

describe('planExpansion', () => {
  it('expands when the claim asks for more than its volume holds, to the kind’s capacity', () => {
    assert.deepEqual(
      planExpansion({
        claim: boundClaim('128Mi', '64Mi'),
        volume: volumeOf('64Mi'),
        kind: 'loop',
        allowVolumeExpansion: true,
      }),
      { kind: 'expand', from: '64Mi', to: '128Mi', toBytes: 134217728n, request: '128Mi' },
    );
    assert.deepEqual(
      planExpansion({
        claim: boundClaim('200M', '96Mi'),
        volume: volumeOf('96Mi'),
        kind: 'loop',
        allowVolumeExpansion: true,
      }),
      { kind: 'expand', from: '96Mi', to: '191Mi', toBytes: 191n * 1048576n, request: '200M' },
    );
    assert.deepEqual(
      planExpansion({
        claim: boundClaim('2Gi', '1Gi'),
        volume: volumeOf('1Gi'),
        kind: 'directory',
        allowVolumeExpansion: true,
      }),
      { kind: 'expand', from: '1Gi', to: '2Gi', toBytes: 2147483648n, request: '2Gi' },
    );
  });

  it('compares sizes, not their spelling', () => {
    const step = planExpansion({
      claim: boundClaim('1024Mi', '1Gi'),
      volume: volumeOf('1Gi'),
      kind: 'loop',
      allowVolumeExpansion: true,
    });
    assert.deepEqual(step, { kind: 'none' });
    // 100M is less than the 96Mi (100,663,296 bytes) a sized volume made for it.
    assert.deepEqual(
      planExpansion({
        claim: boundClaim('100M', '96Mi'),
        volume: volumeOf('96Mi'),
        kind: 'loop',
        allowVolumeExpansion: true,
      }),
      { kind: 'none' },
    );
  });

  it('does nothing for a class that forbids it, an unbound or deleted claim, another claim’s volume, or a shrink', () => {
    const input = { volume: volumeOf('64Mi'), kind: 'loop' as const, allowVolumeExpansion: true };
    assert.deepEqual(planExpansion({ ...input, claim: boundClaim('128Mi', '64Mi'), allowVolumeExpansion: false }), {
      kind: 'none',
    });
    const pending = { ...boundClaim('128Mi', '64Mi'), status: { phase: 'Pending' } };
    assert.deepEqual(planExpansion({ ...input, claim: pending }), { kind: 'none' });
    const deleted = boundClaim('128Mi', '64Mi');
    assert.deepEqual(
      planExpansion({ ...input, claim: { ...deleted, metadata: { ...deleted.metadata, deletionTimestamp: 'x' } } }),
      { kind: 'none' },
    );
    const other = boundClaim('128Mi', '64Mi');
    assert.deepEqual(planExpansion({ ...input, claim: { ...other, metadata: { ...other.metadata, uid: 'c-2' } } }), {
      kind: 'none',
    });
    assert.deepEqual(
      planExpansion({ ...input, claim: boundClaim('128Mi', '64Mi'), volume: volumeOf('64Mi', 'Released') }),
      {
        kind: 'none',
      },
    );
    assert.deepEqual(planExpansion({ ...input, claim: boundClaim('32Mi', '64Mi') }), { kind: 'none' });
    assert.deepEqual(planExpansion({ ...input, claim: boundClaim('64Mi', '64Mi') }), { kind: 'none' });
  });

  it('finishes a resize whose volume grew but whose claim does not say so yet', () => {
    const input = { volume: volumeOf('128Mi'), kind: 'loop' as const, allowVolumeExpansion: true };
    assert.deepEqual(planExpansion({ ...input, claim: boundClaim('128Mi', '64Mi') }), {
      kind: 'finish',
      capacity: '128Mi',
    });
    const marked = boundClaim('128Mi', '128Mi', {
      allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
    });
    assert.deepEqual(planExpansion({ ...input, claim: marked }), { kind: 'finish', capacity: '128Mi' });
    const failed = boundClaim('128Mi', '128Mi', { conditions: [{ type: 'ControllerResizeError', status: 'True' }] });
    assert.deepEqual(planExpansion({ ...input, claim: failed }), { kind: 'finish', capacity: '128Mi' });
  });
});

describe('the claim status of a resize (as the external-resizer writes it)', () => {
  const claim = boundClaim('128Mi', '64Mi', {
    conditions: [
      { type: 'ControllerResizeError', status: 'True', message: 'old' },
      { type: 'ModifyingVolume', status: 'True' },
    ],
  });

  it('marks a started resize: Resizing, allocated size, in progress, guarded by resourceVersion', () => {
    const patch = resizeStartedStatus(claim, '128Mi', '2026-12-07T10:00:00Z');
    assert.deepEqual(patch, {
      metadata: { resourceVersion: '42' },
      status: {
        conditions: [
          { type: 'ModifyingVolume', status: 'True' },
          { type: 'Resizing', status: 'True', lastTransitionTime: '2026-12-07T10:00:00Z' },
        ],
        allocatedResources: { storage: '128Mi' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
      },
    });
    assert.deepEqual(resizeStartedAnnotations('kanri.dev/process-node'), {
      metadata: {
        annotations: {
          'volume.kubernetes.io/storage-resizer': 'kanri.dev/process-node',
          'volume.kubernetes.io/node-expansion-not-required': null,
        },
      },
    });
  });

  it('knows a resize to the same size was already started', () => {
    const started = {
      ...boundClaim('128Mi', '64Mi', {
        allocatedResources: { storage: '128Mi' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
      }),
    };
    const annotated = {
      ...started,
      metadata: {
        ...started.metadata,
        annotations: { 'volume.kubernetes.io/storage-resizer': 'kanri.dev/process-node' },
      },
    };
    assert.equal(resizeStarted(annotated, '128Mi'), true);
    assert.equal(resizeStarted(annotated, '256Mi'), false);
    assert.equal(resizeStarted(started, '128Mi'), false);
    assert.equal(resizeStarted(claim, '128Mi'), false);
  });

  it('finishes: new capacity, no resize condition, no resize status, allocatedResources kept', () => {
    assert.deepEqual(resizeFinishedStatus(claim, '128Mi'), {
      metadata: { resourceVersion: '42' },
      status: {
        capacity: { storage: '128Mi' },
        conditions: [{ type: 'ModifyingVolume', status: 'True' }],
        allocatedResourceStatuses: { storage: null },
      },
    });
    assert.deepEqual(resizeFinishedAnnotations(), {
      metadata: { annotations: { 'volume.kubernetes.io/node-expansion-not-required': 'true' } },
    });
  });

  it('records a failure as ControllerResizeError, keeping the other resize conditions and the transition time of the same failure', () => {
    const resizing = boundClaim('128Mi', '64Mi', {
      conditions: [{ type: 'Resizing', status: 'True', lastTransitionTime: 't0' }],
    });
    const first = resizeFailedStatus(resizing, 'resize2fs: Permission denied', 't1') as {
      status: { conditions: { type: string; message?: string; lastTransitionTime?: string }[] };
    };
    assert.deepEqual(first, {
      status: {
        conditions: [
          { type: 'Resizing', status: 'True', lastTransitionTime: 't0' },
          {
            type: 'ControllerResizeError',
            status: 'True',
            lastTransitionTime: 't1',
            message: 'failed to expand pvc with resize2fs: Permission denied',
          },
        ],
      },
    });
    const again = resizeFailedStatus(
      {
        ...resizing,
        status: { ...resizing.status, conditions: first.status.conditions.map((c) => ({ ...c, status: 'True' })) },
      },
      'resize2fs: Permission denied',
      't2',
    ) as typeof first;
    assert.equal(again.status.conditions.find((c) => c.type === 'ControllerResizeError')?.lastTransitionTime, 't1');
    const other = resizeFailedStatus(
      {
        ...resizing,
        status: { ...resizing.status, conditions: first.status.conditions.map((c) => ({ ...c, status: 'True' })) },
      },
      'another failure',
      't3',
    ) as typeof first;
    assert.equal(other.status.conditions.find((c) => c.type === 'ControllerResizeError')?.lastTransitionTime, 't3');
    assert.equal(other.status.conditions.filter((c) => c.type === 'ControllerResizeError').length, 1);
  });
});

describe('buildClaimEvent', () => {
  it('is an Event about the claim, from the provisioner', () => {
    const claim = boundClaim('128Mi', '64Mi');
    const event = buildClaimEvent(
      claim,
      { type: 'Warning', reason: 'VolumeResizeFailed', message: 'no' },
      new Date('2026-12-07T10:00:00.123Z'),
      'abc',
    );
    assert.deepEqual(event.metadata, { name: 'data.abc', namespace: 'shop' });
    assert.deepEqual(event.involvedObject, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: 'shop',
      name: 'data',
      uid: 'c-1',
      resourceVersion: '42',
    });
    assert.equal(event.type, 'Warning');
    assert.equal(event.reason, 'VolumeResizeFailed');
    assert.equal(event.source?.component, 'kanri.dev/process-node');
    assert.equal(event.firstTimestamp, '2026-12-07T10:00:00Z');
  });
});

describe('RetryBackoff', () => {
  it('waits 2 s after a first failure, twice as long after each next one, at most a minute, and forgets on success', () => {
    const backoff = new RetryBackoff();
    assert.equal(backoff.waiting('a', 0), false);
    assert.equal(backoff.failed('a', 0), 2_000);
    assert.equal(backoff.waiting('a', 1_999), true);
    assert.equal(backoff.waiting('a', 2_000), false);
    assert.equal(backoff.waiting('b', 1), false);
    assert.equal(backoff.failed('a', 2_000), 4_000);
    for (let i = 0; i < 10; i++) backoff.failed('a', 0);
    assert.equal(backoff.failed('a', 0), 60_000);
    backoff.succeeded('a');
    assert.equal(backoff.waiting('a', 0), false);
    assert.equal(backoff.failed('a', 0), 2_000);
  });
});
