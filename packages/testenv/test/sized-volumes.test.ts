/**
 * Sized volumes (`kanri-sized`) and claim expansion on process nodes, end to end: a claim gets a
 * filesystem of its size, mounted where its Pod writes, of this machine's backend (ext4 on a loop
 * device where a mounted ext4 grows, else tmpfs); an expansion grows it online under the running
 * Pod; a directory claim expands too; a deleted claim's mount (and loop device and image) go, and
 * so do the volumes still bound when the control plane stops. The sized tests need root.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Event, PersistentVolume, PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import {
  type ControlPlane,
  findProcessContainer,
  PROCESS_NODE_LABEL,
  PROVISIONER_NAME,
  SIZED_STORAGE_CLASS,
  sizedVolumeBackendChoice,
  startControlPlane,
} from '../src/index.js';
import { releaseSizedVolumesWithin } from '../src/process-node/volumes/host-mounts/loop-volume.js';
import { readMounts, topMountAt } from '../src/process-node/volumes/host-mounts/mount-table.js';
import { realNodesUnsupportedReason } from '../src/real-node/real-nodes.js';
import { type RestTarget, restRequest, restTargetFromKubeconfig } from '../src/rest.js';
import { ensureTestImages } from '../src/test-images/ensure-test-images.js';
import { waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/process-pod.js', import.meta.url));
const IMAGE = 'example.com/kanri/process-pod';
const ns = 'sized';
const MIB = 1024 * 1024;
const choice = await sizedVolumeBackendChoice();
const { backend } = choice;
const unsupported = backend === undefined ? choice.reason : undefined;
const realUnsupported = unsupported ?? (await realNodesUnsupportedReason());

const losetupJ = (image: string) => execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).trim();
const statfsBytes = (path: string) => {
  const s = statfsSync(path);
  return s.blocks * s.bsize;
};
/**
 * What `statfs` may say for a volume of `mib`: a tmpfs is exactly its size; ext4's journal and
 * tables take up to a fifth of so small a filesystem.
 */
const assertSize = (bytes: number, mib: number, where: string) => {
  if (backend === 'tmpfs') assert.equal(bytes, mib * MIB, `statfs ${where} says ${bytes} bytes for ${mib}Mi`);
  else assert.ok(bytes > 0.75 * mib * MIB && bytes <= mib * MIB, `statfs ${where} says ${bytes} bytes for ${mib}Mi`);
};
const FS_TYPE = backend === 'tmpfs' ? 'tmpfs' : 'ext4';

describe('sized volumes and claim expansion on process nodes', () => {
  let cp: ControlPlane;
  let admin: RestTarget;
  let dataDir: string;
  let stopped = false;
  // What the expansion tests compare against.
  let volumePath = '';
  let mountId: number | undefined;
  let writerPid: number | undefined;
  let writerUid = '';

  const api = async <T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => {
    const response = await restRequest<T>(
      admin,
      method,
      path,
      body,
      method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    );
    return response;
  };
  const getClaim = async (name: string) =>
    (await api<PersistentVolumeClaim>('GET', `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`)).body;
  const getVolume = async (name: string) => {
    const response = await api<PersistentVolume>('GET', `/api/v1/persistentvolumes/${name}`);
    return response.status === 404 ? undefined : response.body;
  };
  const createClaim = async (name: string, storage: string, storageClassName?: string) => {
    const response = await api('POST', `/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      metadata: { name },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage } },
        ...(storageClassName ? { storageClassName } : {}),
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
  };
  const waitBound = (name: string) =>
    waitFor(
      `claim ${name} to be Bound`,
      async () => {
        const claim = await getClaim(name);
        return claim.status?.phase === 'Bound' && claim.spec?.volumeName ? claim : undefined;
      },
      30_000,
    );
  const resize = async (name: string, storage: string) => {
    const response = await api('PATCH', `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`, {
      spec: { resources: { requests: { storage } } },
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
  };
  const eventsAbout = async (name: string) =>
    (
      await api<{ items: Event[] }>(
        'GET',
        `/api/v1/namespaces/${ns}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${name}`)}`,
      )
    ).body.items ?? [];
  const provisionerLog = () => readFileSync(join(dataDir, 'logs', 'process-node-0.log'), 'utf8');

  before(async () => {
    cp = await startControlPlane({
      controllers: true,
      processNodes: { count: 1, images: { [IMAGE]: { entrypoint: [process.execPath, fixture] } } },
    });
    dataDir = cp.dataDir ?? '';
    admin = restTargetFromKubeconfig(cp.kubeconfig);
    assert.equal((await api('POST', '/api/v1/namespaces', { metadata: { name: ns } })).status, 201);
    await waitFor('the default ServiceAccount', async () => {
      return (await api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200;
    });
  });

  after(async () => {
    try {
      if (!stopped) {
        await admin?.dispatcher.close();
        await cp?.stop();
      }
    } finally {
      // Whatever a failed test or stop left mounted or attached, by path.
      if (dataDir) await releaseSizedVolumesWithin(dataDir);
    }
  });

  it('offers the sized StorageClass beside the default one where it can', async () => {
    const response = await api<{
      items: {
        metadata: { name: string; annotations?: Record<string, string> };
        provisioner: string;
        parameters?: Record<string, string>;
        allowVolumeExpansion?: boolean;
      }[];
    }>('GET', '/apis/storage.k8s.io/v1/storageclasses');
    const byName = new Map(response.body.items.map((sc) => [sc.metadata.name, sc]));
    assert.equal(
      byName.get('kanri-local')?.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'],
      'true',
    );
    const sized = byName.get(SIZED_STORAGE_CLASS);
    if (unsupported) {
      assert.equal(sized, undefined, `not offered: ${unsupported}`);
      return;
    }
    assert.equal(sized?.provisioner, PROVISIONER_NAME);
    assert.deepEqual(sized?.parameters, { 'kanri.dev/volume': 'loop' });
    assert.equal(sized?.allowVolumeExpansion, true);
    assert.equal(sized?.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'], undefined);
  });

  it(`provisions a claim as a filesystem of its size (${backend}), mounted where its Pod writes`, {
    skip: unsupported,
  }, async () => {
    await createClaim('data', '64Mi', SIZED_STORAGE_CLASS);
    const claim = await waitBound('data');
    assert.equal(claim.status?.capacity?.storage, '64Mi');
    const volume = await getVolume(claim.spec?.volumeName ?? '');
    assert.equal(volume?.spec?.capacity?.storage, '64Mi');
    assert.equal(volume?.spec?.hostPath?.type, 'Directory');
    assert.equal(volume?.metadata?.annotations?.['kanri.dev/volume'], 'loop');
    assert.equal(volume?.metadata?.annotations?.['kanri.dev/volume-backend'], backend);
    assert.match(provisionerLog(), new RegExp(`provisioner: ${SIZED_STORAGE_CLASS} volumes are ${backend}: `));
    volumePath = volume?.spec?.hostPath?.path ?? '';
    assert.equal(dirname(volumePath), join(dataDir, 'volumes'));
    assert.match(provisionerLog(), new RegExp(`provisioned ${volumePath} \\(64Mi, ${backend}\\) for sized/data`));
    const mount = topMountAt(await readMounts(), volumePath);
    assert.equal(mount?.fsType, FS_TYPE);
    if (backend === 'ext4-loop') {
      assert.match(mount?.source ?? '', /^\/dev\/loop\d+$/);
      assert.match(losetupJ(`${volumePath}.img`), new RegExp(`^${mount?.source}: `));
    } else {
      assert.equal(existsSync(`${volumePath}.img`), false, 'a tmpfs volume has no image');
      assert.equal((statSync(volumePath).mode & 0o777).toString(8), '700');
    }
    mountId = mount?.id;
    assertSize(statfsBytes(volumePath), 64, 'on the machine');

    const created = await api<Pod>('POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'writer' },
      spec: {
        nodeSelector: { [PROCESS_NODE_LABEL]: 'true' },
        containers: [
          {
            name: 'main',
            image: `${IMAGE}:1`,
            env: [
              { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'WRITE_FILES', value: '/data/marker' },
            ],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1 },
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    writerUid = created.body.metadata?.uid ?? '';
    await waitFor(
      'Pod writer to be Ready',
      async () => {
        const pod = (await api<Pod>('GET', `/api/v1/namespaces/${ns}/pods/writer`)).body;
        return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      },
      60_000,
    );
    const marker = join(volumePath, 'marker');
    assert.equal(readFileSync(marker, 'utf8'), `${writerUid}\n`);
    assert.equal(statSync(marker).dev, statSync(volumePath).dev);
    assert.notEqual(statSync(marker).dev, statSync(dirname(volumePath)).dev, 'written on the volume, not beneath it');
    writerPid = findProcessContainer(cp.processNodes, ns, 'writer', 'main')?.pid;
    assert.ok(writerPid);
  });

  const assertStillInUse = async () => {
    assert.equal(topMountAt(await readMounts(), volumePath)?.id, mountId, 'the same mount: never unmounted');
    assert.equal(readFileSync(join(volumePath, 'marker'), 'utf8'), `${writerUid}\n`);
    const container = findProcessContainer(cp.processNodes, ns, 'writer', 'main');
    assert.equal(container?.pid, writerPid, 'the Pod kept running');
    assert.equal(container?.restartCount, 0);
  };

  it(`expands the claim online (${backend}): the filesystem grows under the running Pod, its files kept`, {
    skip: unsupported,
  }, async () => {
    assert.ok(volumePath, 'the provisioning test ran');
    const claimBefore = await getClaim('data');
    assert.equal(
      (await getVolume(claimBefore.spec?.volumeName ?? ''))?.metadata?.annotations?.['kanri.dev/volume-backend'],
      backend,
      'the backend that ran',
    );
    const before = join(volumePath, 'before-growth');
    writeFileSync(before, 'written at 64Mi\n');
    assertSize(statfsBytes(volumePath), 64, 'before');
    const started = Date.now();
    await resize('data', '128Mi');
    const claim = await waitFor(
      // The status is written first, then the annotation that ends the resize.
      "the claim's capacity to be 128Mi and its resize finished",
      async () => {
        const c = await getClaim('data');
        const done = c.metadata?.annotations?.['volume.kubernetes.io/node-expansion-not-required'] === 'true';
        return c.status?.capacity?.storage === '128Mi' && done ? c : undefined;
      },
      30_000,
    );
    const elapsed = Date.now() - started;
    const size = statfsBytes(volumePath);
    assertSize(size, 128, 'after');
    assert.equal(readFileSync(before, 'utf8'), 'written at 64Mi\n', 'the same filesystem, not a new empty one');
    assert.equal(claim.status?.capacity?.storage, '128Mi');
    assert.equal((await getVolume(claim.spec?.volumeName ?? ''))?.spec?.capacity?.storage, '128Mi');
    assert.deepEqual(claim.status?.allocatedResources, { storage: '128Mi' });
    assert.equal(claim.status?.allocatedResourceStatuses?.storage, undefined);
    assert.deepEqual(
      (claim.status?.conditions ?? []).filter((c) => /Resiz/.test(c.type)),
      [],
      'no resize condition is left',
    );
    assert.equal(claim.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'], PROVISIONER_NAME);
    assert.equal(claim.metadata?.annotations?.['volume.kubernetes.io/node-expansion-not-required'], 'true');
    await waitFor('a VolumeResizeSuccessful event', async () =>
      (await eventsAbout('data')).some((e) => e.reason === 'VolumeResizeSuccessful'),
    );
    await waitFor('the expansion logged', () =>
      new RegExp(`expanded sized/data \\(pvc-[^,]+, ${backend}, online\\) from 64Mi to 128Mi in \\d+ ms`).test(
        provisionerLog(),
      ),
    );
    await assertStillInUse();
    console.log(
      `sized volume (${backend}) 64Mi -> 128Mi online: claim status after ${elapsed} ms; statfs ${size} bytes`,
    );
  });

  it('expands a directory claim: capacity recorded, nothing on disk', async () => {
    await createClaim('plain', '1Gi');
    const bound = await waitBound('plain');
    assert.equal(bound.spec?.storageClassName, 'kanri-local');
    await resize('plain', '2Gi');
    const claim = await waitFor(
      "the directory claim's capacity to be 2Gi",
      async () => {
        const c = await getClaim('plain');
        return c.status?.capacity?.storage === '2Gi' ? c : undefined;
      },
      30_000,
    );
    assert.equal((await getVolume(claim.spec?.volumeName ?? ''))?.spec?.capacity?.storage, '2Gi');
    assert.deepEqual(claim.status?.allocatedResources, { storage: '2Gi' });
    assert.equal(claim.status?.allocatedResourceStatuses?.storage, undefined);
    assert.deepEqual(
      (claim.status?.conditions ?? []).filter((c) => /Resiz/.test(c.type)),
      [],
    );
    // Logged once the claim's resize is finished (its status is written first).
    const expanded = await waitFor('the expansion logged with its sizes and duration', () =>
      provisionerLog().match(/.*expanded sized\/plain \(pvc-[^)]+\) from 1Gi to 2Gi in \d+ ms/),
    );
    console.log(expanded[0]);
  });

  it('refuses a sized claim below 16 MiB, saying why on the claim', { skip: unsupported }, async () => {
    await createClaim('tiny', '8Mi', SIZED_STORAGE_CLASS);
    const event = await waitFor('a ProvisioningFailed event', async () =>
      (await eventsAbout('tiny')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.equal(event.type, 'Warning');
    assert.match(event.message ?? '', /requests 8Mi \(8 MiB\); a sized volume needs at least 16 MiB/);
    assert.equal((await getClaim('tiny')).status?.phase, 'Pending');
  });

  it('deletes a released sized volume: unmounted (and detached, its image gone), its directory gone', {
    skip: unsupported,
  }, async () => {
    assert.ok(volumePath, 'the provisioning test ran');
    const volumeName = (await getClaim('data')).spec?.volumeName ?? '';
    assert.equal((await api('DELETE', `/api/v1/namespaces/${ns}/pods/writer`)).status, 200);
    await waitFor(
      'Pod writer to be gone',
      async () => (await api('GET', `/api/v1/namespaces/${ns}/pods/writer`)).status === 404,
      60_000,
    );
    assert.equal((await api('DELETE', `/api/v1/namespaces/${ns}/persistentvolumeclaims/data`)).status, 200);
    await waitFor(`PersistentVolume ${volumeName} to be deleted`, async () => !(await getVolume(volumeName)), 60_000);
    assert.equal(topMountAt(await readMounts(), volumePath), undefined);
    assert.equal(losetupJ(`${volumePath}.img`), '');
    assert.equal(existsSync(`${volumePath}.img`), false);
    assert.equal(existsSync(volumePath), false);
  });

  it('unmounts and detaches the sized volumes still bound when the control plane stops', {
    skip: unsupported,
  }, async () => {
    await createClaim('kept', '16Mi', SIZED_STORAGE_CLASS);
    const claim = await waitBound('kept');
    const path = (await getVolume(claim.spec?.volumeName ?? ''))?.spec?.hostPath?.path ?? '';
    assert.equal(topMountAt(await readMounts(), path)?.fsType, FS_TYPE);
    if (backend === 'ext4-loop') assert.notEqual(losetupJ(`${path}.img`), '');
    await admin.dispatcher.close();
    stopped = true;
    await cp.stop();
    assert.equal(topMountAt(await readMounts(), path), undefined);
    assert.equal(losetupJ(`${path}.img`), '');
    assert.equal(existsSync(dataDir), false);
  });
});

/**
 * A real node's mount namespace is a private copy of the machine's, made when the node starts, so
 * the machine's later mounts never reach it: the provisioner mounts each sized volume in every
 * node's namespace too (ext4: the same loop device again; tmpfs: a clone of the machine's mount),
 * before the PersistentVolume exists, and the kubelet's bind mount into the container then
 * carries the filesystem itself: one filesystem everywhere, so a resize on the machine is the
 * container's too.
 */
describe('sized volumes on real nodes', { skip: realUnsupported }, () => {
  let cp: ControlPlane;
  let admin: RestTarget;
  let dataDir = '';
  const rns = 'sized-real';

  before(async () => {
    const images = await ensureTestImages();
    cp = await startControlPlane({
      realNodes: { count: 1, imageArchives: [images.echo.archive], networkPolicies: false },
    });
    dataDir = cp.dataDir ?? '';
    admin = restTargetFromKubeconfig(cp.kubeconfig);
    assert.equal((await restRequest(admin, 'POST', '/api/v1/namespaces', { metadata: { name: rns } })).status, 201);
    await waitFor('the default ServiceAccount', async () => {
      return (await restRequest(admin, 'GET', `/api/v1/namespaces/${rns}/serviceaccounts/default`)).status === 200;
    });
    const created = await restRequest(admin, 'POST', `/api/v1/namespaces/${rns}/persistentvolumeclaims`, {
      metadata: { name: 'data' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: SIZED_STORAGE_CLASS,
        resources: { requests: { storage: '32Mi' } },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const pod = await restRequest(admin, 'POST', `/api/v1/namespaces/${rns}/pods`, {
      metadata: { name: 'echo' },
      spec: {
        containers: [
          {
            name: 'echo',
            image: images.echo.ref,
            imagePullPolicy: 'Never',
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      },
    });
    assert.equal(pod.status, 201, JSON.stringify(pod.body));
  });

  after(async () => {
    try {
      await admin?.dispatcher.close();
      await cp?.stop();
    } finally {
      if (dataDir) await releaseSizedVolumesWithin(dataDir);
    }
  });

  it("shows the machine's later mounts to no node: the node needs the volume mounted in its own namespace", async () => {
    const probe = join(dataDir, 'mount-probe');
    execFileSync('mkdir', ['-p', probe]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'kanri-probe', probe]);
    try {
      const node = cp.realNodes[0]?.namespacePid;
      assert.ok(node);
      assert.ok(topMountAt(await readMounts(), probe), 'mounted on the machine');
      assert.equal(topMountAt(await readMounts(node), probe), undefined, 'not in the node');
    } finally {
      execFileSync('umount', [probe]);
    }
  });

  it('mounts a sized volume in the node, where its container sees the filesystem, its size and its growth', async () => {
    const pod = await waitFor(
      'Pod echo to run',
      async () => {
        const p = (await restRequest<Pod>(admin, 'GET', `/api/v1/namespaces/${rns}/pods/echo`)).body;
        return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      90_000,
    );
    const claim = (
      await restRequest<PersistentVolumeClaim>(admin, 'GET', `/api/v1/namespaces/${rns}/persistentvolumeclaims/data`)
    ).body;
    const volume = (
      await restRequest<PersistentVolume>(admin, 'GET', `/api/v1/persistentvolumes/${claim.spec?.volumeName}`)
    ).body;
    const path = volume.spec?.hostPath?.path ?? '';
    const onHost = topMountAt(await readMounts(), path);
    assert.equal(onHost?.fsType, FS_TYPE);
    assert.equal(volume.metadata?.annotations?.['kanri.dev/volume-backend'], backend);
    const node = cp.realNodes[0];
    const nodePid = node?.namespacePid;
    assert.ok(nodePid, 'the node runs');
    assert.equal(topMountAt(await readMounts(nodePid), path)?.device, onHost?.device, 'mounted in the node');
    const containerId = (pod.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^[a-z]+:\/\//, '');
    const [pid] = (await node?.containerPids(containerId)) ?? [];
    assert.ok(pid, `a process of container ${containerId}`);
    const inContainer = topMountAt(await readMounts(pid), '/data');
    assert.equal(inContainer?.device, onHost?.device, "the container's /data is the volume's filesystem");
    assert.equal(inContainer?.fsType, FS_TYPE);
    const size = statfsBytes(`/proc/${pid}/root/data`);
    assert.equal(size, statfsBytes(path), 'the same filesystem as on the machine');
    assertSize(size, 32, 'in the container');
    writeFileSync(join(path, 'from-the-machine'), 'before growth\n');
    assert.equal(readFileSync(`/proc/${pid}/root/data/from-the-machine`, 'utf8'), 'before growth\n');

    // Grown on the machine (one resize2fs, or one remount): the node's and the container's mounts
    // are the same filesystem, so they grow with it, under the running container.
    const patched = await restRequest(
      admin,
      'PATCH',
      `/api/v1/namespaces/${rns}/persistentvolumeclaims/data`,
      { spec: { resources: { requests: { storage: '48Mi' } } } },
      'application/merge-patch+json',
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    await waitFor(
      "the claim's capacity to be 48Mi",
      async () =>
        (
          await restRequest<PersistentVolumeClaim>(
            admin,
            'GET',
            `/api/v1/namespaces/${rns}/persistentvolumeclaims/data`,
          )
        ).body.status?.capacity?.storage === '48Mi',
      30_000,
    );
    const grown = statfsBytes(`/proc/${pid}/root/data`);
    assertSize(grown, 48, 'in the container after growth');
    assert.equal(grown, statfsBytes(path), 'the machine sees the same size');
    assert.equal(statfsBytes(`/proc/${nodePid}/root${path}`), grown, 'and so does the node');
    assert.equal(topMountAt(await readMounts(pid), '/data')?.id, inContainer?.id, "the container's same mount");
    assert.equal(readFileSync(`/proc/${pid}/root/data/from-the-machine`, 'utf8'), 'before growth\n');
    console.log(`real node: ${backend} volume 32Mi -> 48Mi, statfs in the container ${size} -> ${grown} bytes`);

    assert.equal((await restRequest(admin, 'DELETE', `/api/v1/namespaces/${rns}/pods/echo`)).status, 200);
    await waitFor(
      'Pod echo to be gone',
      async () => (await restRequest(admin, 'GET', `/api/v1/namespaces/${rns}/pods/echo`)).status === 404,
      90_000,
    );
    assert.equal(
      (await restRequest(admin, 'DELETE', `/api/v1/namespaces/${rns}/persistentvolumeclaims/data`)).status,
      200,
    );
    await waitFor(
      'the released volume to be deleted',
      async () =>
        (await restRequest(admin, 'GET', `/api/v1/persistentvolumes/${volume.metadata?.name}`)).status === 404,
      60_000,
    );
    assert.equal(topMountAt(await readMounts(), path), undefined);
    assert.equal(topMountAt(await readMounts(nodePid), path), undefined, 'unmounted in the node too');
    assert.equal(losetupJ(`${path}.img`), '');
  });
});
