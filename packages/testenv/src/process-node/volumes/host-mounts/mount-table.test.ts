import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loopsBackedBy, loopsBackedWithin, parseLoopDevice } from './loop-devices.js';
import { isWithin, mountsWithin, parseMountInfo, topMountAt } from './mount-table.js';
import { CAP_SYS_RESOURCE, hasCapability } from './sized-support.js';

const MOUNTINFO = [
  '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
  '40 22 0:35 / /tmp rw shared:20 - tmpfs tmpfs rw',
  '51 40 7:0 / /tmp/kanri-testenv-a/volumes/pvc-1 rw,relatime shared:30 - ext4 /dev/loop0 rw',
  '52 40 7:1 / /tmp/kanri-testenv-a/volumes/pvc-2 rw,relatime - ext4 /dev/loop1 rw',
  '53 52 7:1 / /tmp/kanri-testenv-a/volumes/pvc-2 rw,relatime - ext4 /dev/loop1 rw',
  '54 40 0:40 / /tmp/kanri-testenv-a/volumes/pvc-1/deep rw - tmpfs tmpfs rw',
  '55 40 7:2 / /tmp/kanri-testenv-ab/x rw - ext4 /dev/loop2 rw',
  '56 40 7:3 / /tmp/with\\040space rw master:3 - ext4 /dev/loop3 rw',
  '',
].join('\n');

describe('parseMountInfo', () => {
  it('reads each mount, optional fields or not, and unescapes paths', () => {
    const entries = parseMountInfo(MOUNTINFO);
    assert.equal(entries.length, 8);
    assert.deepEqual(entries[2], {
      id: 51,
      device: '7:0',
      mountPoint: '/tmp/kanri-testenv-a/volumes/pvc-1',
      fsType: 'ext4',
      source: '/dev/loop0',
    });
    assert.equal(entries[7]?.mountPoint, '/tmp/with space');
    assert.equal(entries[3]?.fsType, 'ext4');
  });

  it('finds the mounts within a directory, deepest and topmost first, and nothing beside it', () => {
    const entries = parseMountInfo(MOUNTINFO);
    assert.deepEqual(
      mountsWithin(entries, ['/tmp/kanri-testenv-a']).map((m) => m.id),
      [54, 53, 52, 51],
    );
    assert.deepEqual(mountsWithin(entries, ['/tmp/kanri-testenv-a/']).length, 4);
    assert.deepEqual(mountsWithin(entries, ['/elsewhere']), []);
    assert.equal(topMountAt(entries, '/tmp/kanri-testenv-a/volumes/pvc-2')?.id, 53);
    assert.equal(topMountAt(entries, '/tmp/kanri-testenv-a/volumes/pvc-3'), undefined);
  });

  it('isWithin is by whole path components', () => {
    assert.equal(isWithin('/tmp/a/b', '/tmp/a'), true);
    assert.equal(isWithin('/tmp/a', '/tmp/a'), true);
    assert.equal(isWithin('/tmp/ab', '/tmp/a'), false);
    assert.equal(isWithin('/tmp/a', ''), false);
    assert.equal(isWithin('/x', '/'), false);
  });
});

describe('loop devices', () => {
  it('reads a backing file, removed or not, and finds devices by file and by directory', () => {
    const devices = [
      parseLoopDevice('loop0', '/tmp/kanri-testenv-a/volumes/pvc-1.img\n'),
      parseLoopDevice('loop1', '/tmp/kanri-testenv-a/volumes/pvc-2.img (deleted)\n'),
      parseLoopDevice('loop2', '/tmp/kanri-testenv-ab/pvc-3.img\n'),
      parseLoopDevice('loop3', '/var/lib/images/disk.img\n'),
    ];
    assert.deepEqual(devices[1], {
      device: '/dev/loop1',
      backingFile: '/tmp/kanri-testenv-a/volumes/pvc-2.img',
      deleted: true,
    });
    assert.equal(devices[0]?.deleted, false);
    assert.deepEqual(
      loopsBackedWithin(devices, ['/tmp/kanri-testenv-a']).map((d) => d.device),
      ['/dev/loop0', '/dev/loop1'],
    );
    assert.deepEqual(
      loopsBackedBy(devices, '/tmp/kanri-testenv-ab/pvc-3.img').map((d) => d.device),
      ['/dev/loop2'],
    );
    assert.deepEqual(loopsBackedBy(devices, '/tmp/kanri-testenv-ab'), []);
  });
});

describe('hasCapability', () => {
  it('reads the bounding set', () => {
    // This VM's: every capability up to 40 but CAP_SYS_RESOURCE.
    const vm = 'CapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n';
    assert.equal(hasCapability(vm, CAP_SYS_RESOURCE), false);
    assert.equal(hasCapability(vm, 21), true); // CAP_SYS_ADMIN
    assert.equal(hasCapability('CapBnd:\t000001ffffffffff\n', CAP_SYS_RESOURCE), true);
    assert.equal(hasCapability('Name:\tx\n', CAP_SYS_RESOURCE), false);
  });
});
