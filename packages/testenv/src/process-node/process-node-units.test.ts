import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, Pod, Service } from 'kubernetes-types/core/v1.js';
import { restartDelayMs } from './container-runner.js';
import { buildContainerEnv, resourceFieldValue } from './env.js';
import { containerArgv, expandVariables, findImageMapping, imageRepository } from './image.js';
import { resolveMountPath } from './mount-path.js';
import { blockAddress } from './pod-network.js';
import { buildPodStatus, podPhase } from './pod-status.js';
import { buildProcessNode } from './process-node.js';
import { computeServiceEndpoints, pickServicePort } from './service-endpoints.js';
import { parsePasswd, resolveRunAs, setprivUserArgs } from './users.js';
import { buildVolumeForClaim } from './volumes/provisioner.js';

const pod: Pod = {
  metadata: { name: 'web-0', namespace: 'shop', uid: 'u-1', labels: { app: 'web' } },
  spec: { nodeName: 'process-node-0', serviceAccountName: 'web', containers: [{ name: 'main', image: 'x' }] },
};
const where = { namespace: 'shop', name: 'web-0' };

describe('resolveMountPath', () => {
  const env = { KANRI_VOLUME_MOUNTS: JSON.stringify({ '/data': '/tmp/v/data', '/data/logs': '/tmp/v/logs' }) };
  it('maps paths under a mount, the deepest mount first, and leaves others alone', () => {
    assert.equal(resolveMountPath('/data', env), '/tmp/v/data');
    assert.equal(resolveMountPath('/data/pg/x', env), '/tmp/v/data/pg/x');
    assert.equal(resolveMountPath('/data/logs/a', env), '/tmp/v/logs/a');
    assert.equal(resolveMountPath('/database', env), '/database');
    assert.equal(resolveMountPath('/etc/x', {}), '/etc/x', 'no table (a real container): unchanged');
  });
});

describe('image mappings', () => {
  const images = {
    'ghcr.io/k/pg': { entrypoint: ['/bin/agent'], cmd: ['run'], commands: { sh: ['/bin/sh'] } },
    'ghcr.io/k/pg:15': { entrypoint: ['/bin/agent15'] },
  };
  it('matches with or without tag or digest, the exact tag first', () => {
    assert.equal(imageRepository('ghcr.io/k/pg:16@sha256:abc'), 'ghcr.io/k/pg');
    assert.equal(imageRepository('localhost:5000/pg'), 'localhost:5000/pg');
    assert.deepEqual(findImageMapping(images, 'ghcr.io/k/pg:16')?.entrypoint, ['/bin/agent']);
    assert.deepEqual(findImageMapping(images, 'ghcr.io/k/pg:15')?.entrypoint, ['/bin/agent15']);
    assert.deepEqual(findImageMapping(images, 'ghcr.io/k/pg@sha256:abc')?.entrypoint, ['/bin/agent']);
    assert.equal(findImageMapping(images, 'ghcr.io/k/other'), undefined);
  });

  it('applies Kubernetes entrypoint rules and $(VAR) expansion', () => {
    const mapping = images['ghcr.io/k/pg'];
    const vars = new Map([['NAME', 'db']]);
    const argv = (c: { command?: string[]; args?: string[] }) =>
      containerArgv(mapping, { name: 'c', ...c }, vars, where);
    assert.deepEqual(argv({}), { ok: true, argv: ['/bin/agent', 'run'] });
    assert.deepEqual(argv({ args: ['--name=$(NAME)', '$$(NAME)', '$(MISSING)'] }), {
      ok: true,
      argv: ['/bin/agent', '--name=db', '$(NAME)', '$(MISSING)'],
    });
    assert.deepEqual(argv({ command: ['sh', '-c'], args: ['echo'] }), { ok: true, argv: ['/bin/sh', '-c', 'echo'] });
    const failed = argv({ command: ['/usr/bin/postgres'] });
    assert.equal(failed.ok, false);
    assert.match(failed.ok ? '' : failed.message, /shop\/web-0 container "c".*"\/usr\/bin\/postgres"/);
    assert.equal(expandVariables('a$b$', new Map()), 'a$b$');
  });
});

describe('the Node a process node registers', () => {
  it('reports the images it maps in status.images, as a kubelet reports the images its node holds', () => {
    const node = buildProcessNode('process-node-1', { cpu: '2' }, '2026-12-07T00:00:00Z', [
      'ghcr.io/k/pg:16',
      'ghcr.io/k/pg:17',
    ]);
    assert.deepEqual(
      node.status?.images?.map((i) => i.names),
      [['ghcr.io/k/pg:16'], ['ghcr.io/k/pg:17']],
    );
  });
});

describe('container environment', () => {
  const context = { podIP: '127.1.0.9', hostIP: '127.0.0.1', allocatable: { cpu: '16', memory: '64Gi' } };
  const sources = {
    configMaps: new Map([['cfg', { data: { MODE: 'fast', 'bad key': 'x' } }]]),
    secrets: new Map([['pw', { data: { password: Buffer.from('s3cret').toString('base64') } }]]),
  };
  it('resolves envFrom, fieldRef, secretKeyRef, configMapKeyRef, resourceFieldRef and expansion', () => {
    const result = buildContainerEnv(
      pod,
      {
        name: 'main',
        resources: { limits: { memory: '1Gi' } },
        envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'CFG_' }],
        env: [
          { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
          { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
          { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
          { name: 'PW', valueFrom: { secretKeyRef: { name: 'pw', key: 'password' } } },
          { name: 'M', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
          { name: 'MEM_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
          { name: 'CPUS', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
          { name: 'URL', value: 'http://$(IP):80/$(NAME)' },
        ],
      },
      sources,
      context,
    );
    assert.ok(result.ok);
    assert.deepEqual(Object.fromEntries(result.env), {
      CFG_MODE: 'fast',
      NAME: 'web-0',
      NS: 'shop',
      UID: 'u-1',
      IP: '127.1.0.9',
      NODE: 'process-node-0',
      SA: 'web',
      APP: 'web',
      PW: 's3cret',
      M: 'fast',
      MEM_MI: '1024',
      CPUS: '16',
      URL: 'http://127.1.0.9:80/web-0',
    });
  });

  it('fails like the kubelet on a missing secret or key, unless optional', () => {
    const missing = buildContainerEnv(
      pod,
      { name: 'main', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'pw', key: 'nope' } } }] },
      sources,
      context,
    );
    assert.deepEqual(missing, {
      ok: false,
      reason: 'CreateContainerConfigError',
      message: "couldn't find key nope in Secret shop/pw",
    });
    const optional = buildContainerEnv(
      pod,
      { name: 'main', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'gone', key: 'k', optional: true } } }] },
      sources,
      context,
    );
    assert.ok(optional.ok && optional.env.size === 0);
    const limited = {
      name: 'main',
      resources: { limits: { cpu: '1500m', memory: '1.5Gi' }, requests: { cpu: '250m' } },
    };
    assert.equal(resourceFieldValue(limited, 'limits.cpu', undefined, context), '2');
    assert.equal(resourceFieldValue(limited, 'limits.cpu', '1m', context), '1500');
    assert.equal(resourceFieldValue(limited, 'requests.cpu', '100m', context), '3');
    assert.equal(resourceFieldValue(limited, 'limits.memory', '1Mi', context), '1536');
    assert.equal(
      resourceFieldValue(limited, 'limits.memory', '0', context),
      String(1.5 * 2 ** 30),
      'a zero divisor is 1',
    );
    assert.equal(resourceFieldValue(limited, 'limits.memory', 'lots', context), undefined);
  });
});

describe('users', () => {
  const passwd = parsePasswd('root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104::/var/lib/postgresql:/bin/bash\n');
  it('lets the image mapping user win over runAsUser when root, and never switches when not root', () => {
    const root = { uid: 0, gid: 0 };
    const mapped = resolveRunAs({
      mappingUser: 'postgres',
      pod: { runAsUser: 999, fsGroup: 2000 },
      passwd,
      self: root,
    });
    assert.deepEqual(mapped, {
      ok: true,
      runAs: { uid: 101, gid: 104, groups: [2000], home: '/var/lib/postgresql', switch: true },
    });
    assert.deepEqual(setprivUserArgs(mapped.ok ? mapped.runAs : (undefined as never)), [
      '--reuid=101',
      '--regid=104',
      '--groups=2000',
    ]);
    const fromPod = resolveRunAs({
      pod: { runAsUser: 1000, runAsGroup: 1000 },
      container: { runAsUser: 101 },
      passwd,
      self: root,
    });
    assert.ok(fromPod.ok && fromPod.runAs.uid === 101 && fromPod.runAs.gid === 1000);
    assert.equal(resolveRunAs({ pod: { runAsNonRoot: true }, passwd, self: root }).ok, false);
    assert.equal(resolveRunAs({ mappingUser: 'nobody-here', passwd, self: root }).ok, false);
    const unprivileged = resolveRunAs({ mappingUser: 'postgres', passwd, self: { uid: 1000, gid: 1000 } });
    assert.ok(unprivileged.ok && !unprivileged.runAs.switch && unprivileged.runAs.uid === 1000);
  });
});

describe('pod status', () => {
  const running: ContainerStatus = {
    name: 'a',
    image: 'x',
    imageID: '',
    ready: true,
    restartCount: 0,
    state: { running: {} },
  };
  const exited = (code: number): ContainerStatus => ({
    ...running,
    ready: false,
    state: { terminated: { exitCode: code } },
  });
  it('derives the phase as the kubelet does', () => {
    const phase = (restartPolicy: string, containers: ContainerStatus[]) =>
      podPhase({ restartPolicy, initialized: true, initFailed: false, containers });
    assert.equal(phase('Always', [running]), 'Running');
    assert.equal(phase('Never', [exited(0)]), 'Succeeded');
    assert.equal(phase('Never', [exited(1)]), 'Failed');
    assert.equal(phase('OnFailure', [exited(1)]), 'Running');
    assert.equal(phase('Always', [{ ...running, state: { waiting: {} } }]), 'Pending');
    assert.equal(
      phase('Always', [{ ...running, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: exited(1).state }]),
      'Running',
    );
    assert.equal(podPhase({ restartPolicy: 'Never', initialized: false, initFailed: true, containers: [] }), 'Failed');
  });

  it("keeps other writers' conditions, transition times of unchanged ones, and a terminal phase", () => {
    const withConditions: Pod = {
      ...pod,
      status: {
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: 't0' },
          { type: 'Ready', status: 'True', lastTransitionTime: 't1' },
        ],
      },
    };
    const input = {
      pod: withConditions,
      podIP: '127.1.0.2',
      hostIP: '127.0.0.1',
      startTime: 't0',
      sandboxReady: true,
      initialized: true,
      initFailed: false,
      initContainerStatuses: [],
      containerStatuses: [running],
      now: 't2',
    };
    const status = buildPodStatus(input);
    assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime, 't1');
    assert.equal(
      status.conditions?.some((c) => c.type === 'PodScheduled'),
      false,
      'the scheduler owns PodScheduled',
    );
    assert.deepEqual(status.podIPs, [{ ip: '127.1.0.2' }]);
    const unready = buildPodStatus({ ...input, containerStatuses: [{ ...running, ready: false }] });
    assert.deepEqual(
      unready.conditions?.filter((c) => c.type === 'Ready').map((c) => [c.status, c.reason, c.lastTransitionTime]),
      [['False', 'ContainersNotReady', 't2']],
    );
    assert.equal(buildPodStatus({ ...input, previousPhase: 'Failed' }).phase, 'Failed');
  });
});

describe('services, addresses, volumes, back-off', () => {
  it('computes endpoints as the EndpointSlice controller would', () => {
    const service: Service = {
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    };
    const member = (name: string, ip: string, ready: boolean, extra: Partial<Pod['metadata']> = {}): Pod => ({
      metadata: { name, labels: { app: 'web' }, ...extra },
      spec: { containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }] },
      status: { podIP: ip, phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
    });
    const endpoints = computeServiceEndpoints(service, pickServicePort(service, 80), [
      member('b', '127.1.0.2', false),
      member('a', '127.1.0.1', true),
      member('c', '127.1.0.3', true, { deletionTimestamp: 'now' }),
      { ...member('x', '127.1.0.4', true), metadata: { name: 'x', labels: { app: 'other' } } },
    ]);
    assert.deepEqual(
      endpoints.map((e) => [e.pod, e.address, e.ready, e.terminating]),
      [
        ['a', '127.1.0.1:8080', true, false],
        ['b', '127.1.0.2:8080', false, false],
        ['c', '127.1.0.3:8080', false, true],
      ],
    );
    assert.throws(() => pickServicePort(service, 81), /no port 81/);
  });

  it('hands out loopback addresses that skip 127.0.x and .0.0', () => {
    assert.equal(blockAddress(3, 0), '127.3.0.1');
    assert.equal(blockAddress(3, 255), '127.3.1.0');
  });

  it('pre-binds a provisioned volume to its claim', () => {
    const pv = buildVolumeForClaim(
      {
        metadata: { name: 'data', namespace: 'shop', uid: 'c-1' },
        spec: { resources: { requests: { storage: '5Gi' } } },
      },
      'kanri-local',
      '/tmp/v',
    );
    assert.equal(pv.metadata?.name, 'pvc-c-1');
    assert.deepEqual(pv.spec?.claimRef, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: 'shop',
      name: 'data',
      uid: 'c-1',
    });
    assert.equal(pv.spec?.capacity?.storage, '5Gi');
    assert.equal(pv.spec?.hostPath?.path, '/tmp/v');
  });

  it('backs off restarts from 1 s, doubling, up to 10 s', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 9].map(restartDelayMs), [1000, 2000, 4000, 8000, 10000, 10000]);
  });
});
