import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { claimAccess, planVolumeAccess } from './volume-access.js';

describe('planVolumeAccess', () => {
  it("gives a volume to the Pod's one user alone, or to its fsGroup", () => {
    assert.deepEqual(planVolumeAccess([{ uid: 26, gid: 26 }], undefined), { uid: 26, gid: 26, mode: 0o700 });
    assert.deepEqual(planVolumeAccess([{ uid: 26, gid: 26 }], 2000), { uid: 26, gid: 2000, mode: 0o2770 });
    assert.deepEqual(
      planVolumeAccess(
        [
          { uid: 0, gid: 0 },
          { uid: 26, gid: 26 },
        ],
        undefined,
      ),
      { uid: 26, gid: 26, mode: 0o700 },
      'root needs no permission bits',
    );
    assert.deepEqual(planVolumeAccess([{ uid: 0, gid: 0 }], undefined), { uid: 0, gid: 0, mode: 0o700 });
    assert.deepEqual(
      planVolumeAccess(
        [
          { uid: 26, gid: 100 },
          { uid: 27, gid: 100 },
        ],
        undefined,
      ),
      { uid: 26, gid: 100, mode: 0o2770 },
      'two users of one group share it through the group',
    );
  });

  it('leaves the world-writable fallback to the caller only where no user or group serves every container', () => {
    assert.equal(planVolumeAccess([undefined], undefined), undefined, "an image's own USER is unknown here");
    assert.deepEqual(planVolumeAccess([undefined], 26), { uid: 0, gid: 26, mode: 0o2770 }, 'fsGroup covers it');
    assert.equal(
      planVolumeAccess(
        [
          { uid: 26, gid: 26 },
          { uid: 27, gid: 27 },
        ],
        undefined,
      ),
      undefined,
    );
  });
});

describe('claimAccess', () => {
  const pod = (security: Record<string, number>, containerSecurity: Record<string, number> = {}): Pod => ({
    spec: {
      securityContext: security,
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'db-pgdata' } },
        { name: 'tmp', emptyDir: {} },
      ],
      initContainers: [{ name: 'init', image: 'x', volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }] }],
      containers: [
        {
          name: 'db',
          image: 'x',
          securityContext: containerSecurity,
          volumeMounts: [{ name: 'data', mountPath: '/d' }],
        },
      ],
    },
  });

  it("reads the claim's users from the securityContexts of the containers that mount it", () => {
    assert.deepEqual(claimAccess(pod({ runAsUser: 26, runAsGroup: 26, fsGroup: 26 }), 'db-pgdata'), {
      uid: 26,
      gid: 26,
      mode: 0o2770,
    });
    assert.deepEqual(claimAccess(pod({ runAsUser: 26 }, { runAsUser: 1000, runAsGroup: 1000 }), 'db-pgdata'), {
      uid: 1000,
      gid: 1000,
      mode: 0o700,
    });
    assert.equal(claimAccess(pod({}), 'db-pgdata'), undefined, 'no user named: the image decides');
  });
});
