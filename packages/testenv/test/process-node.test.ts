import assert from 'node:assert/strict';
import { access, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Container, Pod } from 'kubernetes-types/core/v1.js';
import {
  type ControlPlane,
  findProcessContainer,
  PROCESS_NODE_LABEL,
  runnableAs,
  ServiceEndpointReader,
  serviceAddress,
  serviceEndpoints,
  startControlPlane,
} from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { type RestTarget, restRequest, restTargetFromKubeconfig } from '../src/rest.js';
import { waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/process-pod.js', import.meta.url));
const ns = 'pn';
const IMAGE = 'example.com/kanri/process-pod';
const AS_POSTGRES = 'example.com/kanri/process-pod-as-postgres';
const isRoot = process.getuid?.() === 0;

const podEnv = [
  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
  { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
  { name: 'SA_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
];

function container(extra: Partial<Container> = {}): Container {
  return {
    name: 'main',
    image: `${IMAGE}:1.0`,
    ports: [{ name: 'http', containerPort: 8080 }],
    // Without a readiness probe a Pod is Ready once its process starts, before it listens.
    readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1 },
    ...extra,
    env: [...podEnv, ...(extra.env ?? [])],
  };
}

function podSpec(
  name: string,
  containers: Container[],
  spec: Partial<Pod['spec']> = {},
  labels?: Record<string, string>,
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
    spec: { nodeSelector: { [PROCESS_NODE_LABEL]: 'true' }, containers, ...spec },
  };
}

describe('process nodes', () => {
  let cp: ControlPlane;
  let admin: RestTarget;
  let markers: string;
  const everyPid = new Set<number>();

  const create = async (path: string, body: unknown) => {
    const response = await restRequest(admin, 'POST', path, body);
    assert.equal(response.status, 201, JSON.stringify(response.body));
    return response.body;
  };
  const getPod = async (name: string) => {
    const response = await restRequest<Pod>(admin, 'GET', `/api/v1/namespaces/${ns}/pods/${name}`);
    return response.status === 404 ? undefined : response.body;
  };
  const condition = (pod: Pod | undefined, type: string) =>
    pod?.status?.conditions?.find((c) => c.type === type)?.status;
  const waitReady = (name: string): Promise<Pod> =>
    waitFor(
      `Pod ${name} to be Ready`,
      async () => {
        const pod = await getPod(name);
        return condition(pod, 'Ready') === 'True' ? pod : undefined;
      },
      60_000,
    );
  const waitGone = (name: string) =>
    waitFor(`Pod ${name} to be gone`, async () => (await getPod(name)) === undefined, 60_000);
  const http = async <T>(address: string, path: string) => {
    const response = await fetch(`http://${address}${path}`);
    assert.equal(response.status, 200, `${address}${path}`);
    return (await response.json()) as T;
  };
  const remember = (pod: Pod) => {
    for (const c of cp.processNodes.flatMap((n) => n.containers())) {
      if (c.podUid === pod.metadata?.uid) for (const pid of c.pids) everyPid.add(pid);
    }
  };

  before(async () => {
    markers = await mkdtemp(join(tmpdir(), 'kanri-pn-markers-'));
    // Containers run as postgres write their SIGTERM markers here.
    await import('node:fs/promises').then((fs) => fs.chmod(markers, 0o777));
    cp = await startControlPlane({
      controllers: true,
      nodes: 1, // a kwok node too: it must leave process nodes and their Pods alone
      processNodes: {
        count: 2,
        images: {
          [IMAGE]: { entrypoint: [process.execPath, fixture] },
          [AS_POSTGRES]: { entrypoint: [process.execPath, runnableAs('postgres', fixture)], user: 'postgres' },
        },
        maxGracePeriodSeconds: 5,
      },
    });
    admin = restTargetFromKubeconfig(cp.kubeconfig);
    await create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await waitFor('the default ServiceAccount', async () => {
      const sa = await restRequest(admin, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`);
      return sa.status === 200;
    });
  });

  after(async () => {
    await admin?.dispatcher.close();
    await cp?.stop();
    await rm(markers, { recursive: true, force: true });
  });

  it('registers Ready nodes that kwok does not manage', async () => {
    assert.deepEqual(cp.processNodeNames, ['process-node-0', 'process-node-1']);
    const nodes = await restRequest<{
      items: {
        metadata: { name: string; labels: Record<string, string>; annotations?: Record<string, string> };
        status: { conditions: { type: string; status: string }[]; allocatable: Record<string, string> };
      }[];
    }>(admin, 'GET', `/api/v1/nodes?labelSelector=${encodeURIComponent(`${PROCESS_NODE_LABEL}=true`)}`);
    assert.deepEqual(nodes.body.items.map((n) => n.metadata.name).sort(), ['process-node-0', 'process-node-1']);
    for (const node of nodes.body.items) {
      assert.equal(node.metadata.annotations?.['kwok.x-k8s.io/node'], undefined);
      assert.ok(node.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'));
      assert.equal(node.status.allocatable.pods, '110');
      const lease = await restRequest<{ spec: { holderIdentity: string; renewTime: string } }>(
        admin,
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node.metadata.name}`,
      );
      assert.equal(lease.body.spec.holderIdentity, node.metadata.name);
    }
  });

  it('runs a Pod as a real process: own loopback IP, env, volumes, user, readiness', async () => {
    await create(`/api/v1/namespaces/${ns}/secrets`, {
      metadata: { name: 'creds' },
      stringData: { password: 'hunter2' },
    });
    await create(`/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: 'settings' },
      data: { mode: 'fast', 'app.conf': 'listen=all\n' },
    });
    const pvc = (await create(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      metadata: { name: 'web-data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    })) as { spec: { storageClassName: string } };
    assert.equal(pvc.spec.storageClassName, 'kanri-local', "the process nodes' StorageClass is the default");
    await create(
      `/api/v1/namespaces/${ns}/pods`,
      podSpec(
        'web',
        [
          container({
            image: `${isRoot ? AS_POSTGRES : IMAGE}:16`,
            env: [
              { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
              { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode' } } },
              { name: 'WRITE_FILES', value: '/scratch/hello.txt,/var/lib/data/hello.txt' },
              { name: 'GREETING', value: 'hi $(POD_NAME)' },
            ],
            envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'CFG_' }],
            readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1 },
            volumeMounts: [
              { name: 'scratch', mountPath: '/scratch' },
              { name: 'data', mountPath: '/var/lib/data' },
              { name: 'config', mountPath: '/etc/app' },
            ],
          }),
        ],
        {
          volumes: [
            { name: 'scratch', emptyDir: {} },
            { name: 'data', persistentVolumeClaim: { claimName: 'web-data' } },
            { name: 'config', configMap: { name: 'settings', items: [{ key: 'app.conf', path: 'app.conf' }] } },
          ],
        },
      ),
    );
    const pod = await waitReady('web');
    assert.equal(pod.status?.phase, 'Running');
    assert.ok(cp.processNodeNames.includes(pod.spec?.nodeName ?? ''), 'scheduled onto a process node');
    const podIP = pod.status?.podIP ?? '';
    assert.match(podIP, /^127\.(\d+)\.\d+\.\d+$/, "a loopback address, not one of kwok's");
    assert.notEqual(podIP, '127.0.0.1');
    assert.equal(pod.status?.hostIP, '127.0.0.1');
    assert.deepEqual(pod.status?.podIPs, [{ ip: podIP }]);
    const status = pod.status?.containerStatuses?.[0];
    assert.equal(status?.ready, true);
    assert.equal(status?.started, true);
    assert.ok(status?.state?.running?.startedAt);

    const env = await http<Record<string, string>>(`${podIP}:8080`, '/env');
    assert.equal(env.POD_NAME, 'web');
    assert.equal(env.POD_NAMESPACE, ns);
    assert.equal(env.POD_UID, pod.metadata?.uid);
    assert.equal(env.POD_IP, podIP);
    assert.equal(env.NODE_NAME, pod.spec?.nodeName);
    assert.equal(env.SA_NAME, 'default');
    assert.equal(env.PASSWORD, 'hunter2');
    assert.equal(env.MODE, 'fast');
    assert.equal(env.CFG_mode, 'fast');
    assert.equal(env.GREETING, 'hi web');
    assert.ok(env.KUBECONFIG, 'a kubeconfig for the ServiceAccount');
    const mounts = JSON.parse(env.KANRI_VOLUME_MOUNTS ?? '{}') as Record<string, string>;
    const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';
    assert.deepEqual(Object.keys(mounts).sort(), ['/etc/app', '/scratch', '/var/lib/data', serviceAccountDir]);
    // The projected volume the ServiceAccount admission plugin adds: token, CA bundle and namespace.
    assert.equal(await readFile(join(mounts[serviceAccountDir] ?? '', 'namespace'), 'utf8'), ns);
    assert.match(await readFile(join(mounts[serviceAccountDir] ?? '', 'ca.crt'), 'utf8'), /BEGIN CERTIFICATE/);
    assert.match(await readFile(join(mounts[serviceAccountDir] ?? '', 'token'), 'utf8'), /^ey/);

    const files = await http<{ written: Record<string, string> }>(`${podIP}:8080`, '/files');
    assert.equal(files.written['/scratch/hello.txt'], join(mounts['/scratch'] ?? '', 'hello.txt'));
    assert.ok(files.written['/scratch/hello.txt']?.startsWith(cp.dataDir ?? '/nowhere'));
    assert.equal(await readFile(files.written['/scratch/hello.txt'] ?? '', 'utf8'), `${pod.metadata?.uid}\n`);
    const pv = await restRequest<{ spec: { volumeName: string } }>(
      admin,
      'GET',
      `/api/v1/namespaces/${ns}/persistentvolumeclaims/web-data`,
    );
    assert.equal(mounts['/var/lib/data'], join(cp.dataDir ?? '', 'volumes', pv.body.spec.volumeName));
    assert.equal(await readFile(files.written['/var/lib/data/hello.txt'] ?? '', 'utf8'), `${pod.metadata?.uid}\n`);
    assert.equal(await readFile(join(mounts['/etc/app'] ?? '', 'app.conf'), 'utf8'), 'listen=all\n');

    const pids = await http<{ pid: number; uid: number }>(`${podIP}:8080`, '/pids');
    const running = findProcessContainer(cp.processNodes, ns, 'web', 'main');
    assert.equal(running?.pid, pids.pid);
    assert.equal(status?.containerID, `process://${pids.pid}`);
    assert.match(
      await readFile(running?.logFile ?? '', 'utf8'),
      new RegExp(`listening on ${podIP.replaceAll('.', '\\.')}:8080`),
    );
    if (isRoot) {
      const postgres = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('postgres:'));
      const uid = Number(postgres?.split(':')[2]);
      assert.equal(pids.uid, uid, "the image mapping's user");
      assert.equal((await stat(mounts['/var/lib/data'] ?? '')).uid, uid, "the volume belongs to the container's user");
      assert.equal((await stat(mounts['/scratch'] ?? '')).uid, uid, "the emptyDir belongs to the container's user");
    }
    // The Pod names its one user and no fsGroup: its volumes are that user's alone, never world-writable.
    for (const mount of ['/scratch', '/var/lib/data']) {
      const mode = (await stat(mounts[mount] ?? '')).mode & 0o7777;
      assert.equal(mode, 0o700, `${mount} is mode ${mode.toString(8)}`);
    }
    remember(pod);
  });

  it('gives the Pod a KUBECONFIG that authenticates as its ServiceAccount, with a token bound to the Pod', async () => {
    await create(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'reader' } });
    await create(`/api/v1/namespaces/${ns}/pods`, podSpec('whoami', [container()], { serviceAccountName: 'reader' }));
    const pod = await waitReady('whoami');
    const review = await http<{
      status: number;
      body: { status: { userInfo: { username: string; extra: Record<string, string[]> } } };
    }>(`${pod.status?.podIP}:8080`, '/whoami');
    assert.equal(review.status, 201);
    assert.equal(review.body.status.userInfo.username, `system:serviceaccount:${ns}:reader`);
    assert.deepEqual(review.body.status.userInfo.extra['authentication.kubernetes.io/pod-name'], ['whoami']);
    remember(pod);
  });

  it('runs a 2-replica Deployment across both process nodes behind a Service reachable with serviceAddress', async () => {
    const labels = { app: 'echo' };
    await create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'echo' },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: { [PROCESS_NODE_LABEL]: 'true' },
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { labelSelector: { matchLabels: labels }, topologyKey: 'kubernetes.io/hostname' },
                ],
              },
            },
            containers: [container({ readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1 } })],
          },
        },
      },
    });
    await create(`/api/v1/namespaces/${ns}/services`, {
      metadata: { name: 'echo' },
      spec: { selector: labels, ports: [{ name: 'web', port: 80, targetPort: 'http' }] },
    });
    const pods = await waitFor(
      '2 ready echo Pods',
      async () => {
        const list = await restRequest<{ items: Pod[] }>(
          admin,
          'GET',
          `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`,
        );
        const ready = list.body.items.filter((p) => condition(p, 'Ready') === 'True');
        return ready.length === 2 ? ready : undefined;
      },
      60_000,
    );
    assert.deepEqual(pods.map((p) => p.spec?.nodeName).sort(), ['process-node-0', 'process-node-1']);
    const endpoints = await serviceEndpoints(cp, ns, 'echo', 80);
    assert.deepEqual(endpoints.map((e) => e.address).sort(), pods.map((p) => `${p.status?.podIP}:8080`).sort());
    assert.ok(endpoints.every((e) => e.ready));
    const address = await serviceAddress(cp, ns, 'echo', 'web');
    assert.ok(endpoints.some((e) => e.address === address));
    const pids = await http<{ pid: number }>(address, '/pids');
    assert.ok(pids.pid > 0);
    for (const pod of pods) remember(pod);
  });

  it('keeps PVC data across Pod re-creation, and deletes the volume once the claim is gone', async () => {
    await create(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      metadata: { name: 'keep' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } },
    });
    const bound = await waitFor('claim keep to be bound', async () => {
      const claim = await restRequest<{ status: { phase: string }; spec: { volumeName?: string } }>(
        admin,
        'GET',
        `/api/v1/namespaces/${ns}/persistentvolumeclaims/keep`,
      );
      return claim.body.status.phase === 'Bound' ? claim.body.spec.volumeName : undefined;
    });
    const pv = await restRequest<{ spec: { capacity: { storage: string }; hostPath: { path: string } } }>(
      admin,
      'GET',
      `/api/v1/persistentvolumes/${bound}`,
    );
    assert.equal(pv.body.spec.capacity.storage, '2Gi');
    const make = () =>
      create(
        `/api/v1/namespaces/${ns}/pods`,
        podSpec(
          'keeper',
          [
            container({
              env: [{ name: 'WRITE_FILES', value: '/data/log.txt' }],
              volumeMounts: [{ name: 'd', mountPath: '/data' }],
            }),
          ],
          { volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'keep' } }] },
        ),
      );
    await make();
    const first = await waitReady('keeper');
    remember(first);
    await restRequest(admin, 'DELETE', `/api/v1/namespaces/${ns}/pods/keeper`);
    await waitGone('keeper');
    await make();
    const second = await waitReady('keeper');
    remember(second);
    const files = await http<{ previous: Record<string, string> }>(`${second.status?.podIP}:8080`, '/files');
    assert.equal(files.previous['/data/log.txt'], `${first.metadata?.uid}\n`, "the first Pod's write survived");
    assert.equal(
      await readFile(join(pv.body.spec.hostPath.path, 'log.txt'), 'utf8'),
      `${first.metadata?.uid}\n${second.metadata?.uid}\n`,
    );

    await restRequest(admin, 'DELETE', `/api/v1/namespaces/${ns}/pods/keeper`);
    await waitGone('keeper');
    await restRequest(admin, 'DELETE', `/api/v1/namespaces/${ns}/persistentvolumeclaims/keep`);
    await waitFor(
      'the released volume to be deleted',
      async () => {
        const gone = await restRequest(admin, 'GET', `/api/v1/persistentvolumes/${bound}`);
        return gone.status === 404;
      },
      60_000,
    );
    await assert.rejects(access(pv.body.spec.hostPath.path), 'its directory is removed too');
  });

  it('restarts a crashing container under restartPolicy Always, and leaves it Failed under Never', async () => {
    const crash = container({ args: ['crash'], env: [{ name: 'EXIT_CODE', value: '3' }] });
    await create(`/api/v1/namespaces/${ns}/pods`, podSpec('crash-always', [crash]));
    await create(`/api/v1/namespaces/${ns}/pods`, podSpec('crash-never', [crash], { restartPolicy: 'Never' }));
    const always = await waitFor(
      'crash-always to have restarted twice',
      async () => {
        const pod = await getPod('crash-always');
        return (pod?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 2 ? pod : undefined;
      },
      60_000,
    );
    const status = always.status?.containerStatuses?.[0];
    assert.equal(status?.lastState?.terminated?.exitCode, 3);
    assert.equal(status?.lastState?.terminated?.reason, 'Error');
    assert.notEqual(always.status?.phase, 'Failed');
    const never = await waitFor(
      'crash-never to fail',
      async () => {
        const pod = await getPod('crash-never');
        return pod?.status?.phase === 'Failed' ? pod : undefined;
      },
      60_000,
    );
    const terminated = never.status?.containerStatuses?.[0];
    assert.equal(terminated?.state?.terminated?.exitCode, 3);
    assert.equal(terminated?.restartCount, 0);
    assert.equal(condition(never, 'Ready'), 'False');
    const log = await readFile(findProcessContainer(cp.processNodes, ns, 'crash-always')?.logFile ?? '', 'utf8');
    assert.ok((log.match(/process-pod crash/g) ?? []).length >= 2, 'each run appends to the same log');
    remember(always);
    remember(never);
  });

  it('runs init containers to completion first, and restarts a container its liveness probe fails', async () => {
    await create(
      `/api/v1/namespaces/${ns}/pods`,
      podSpec(
        'init-live',
        [
          container({
            livenessProbe: {
              httpGet: { path: '/nope', port: 'http' },
              initialDelaySeconds: 1,
              periodSeconds: 1,
              failureThreshold: 2,
            },
          }),
        ],
        {
          initContainers: [
            container({
              name: 'setup',
              args: ['crash'],
              env: [{ name: 'EXIT_CODE', value: '0' }],
              readinessProbe: undefined,
            }),
          ],
        },
      ),
    );
    const pod = await waitFor(
      'init-live to be restarted by its liveness probe',
      async () => {
        const got = await getPod('init-live');
        return (got?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? got : undefined;
      },
      60_000,
    );
    const init = pod.status?.initContainerStatuses?.[0];
    assert.equal(init?.state?.terminated?.exitCode, 0);
    assert.equal(init?.state?.terminated?.reason, 'Completed');
    assert.equal(condition(pod, 'Initialized'), 'True');
    const main = pod.status?.containerStatuses?.[0];
    const setupDone = Date.parse(init?.state?.terminated?.finishedAt ?? '');
    assert.ok(
      Date.parse(main?.lastState?.terminated?.startedAt ?? '') >= setupDone,
      'main started after setup finished',
    );
    // The fixture exits 0 on SIGTERM: the liveness probe, not the exit code, made it restart.
    assert.equal(main?.lastState?.terminated?.exitCode, 0);
    remember(pod);
  });

  it('on deletion SIGTERMs the process group, then the Pod object disappears', async () => {
    const marker = join(markers, 'term.log');
    await create(
      `/api/v1/namespaces/${ns}/pods`,
      podSpec('graceful', [
        container({
          env: [
            { name: 'TERM_MARKER', value: marker },
            { name: 'SPAWN_CHILD', value: '1' },
          ],
        }),
      ]),
    );
    const pod = await waitReady('graceful');
    const pids = await http<{ pid: number; child: number }>(`${pod.status?.podIP}:8080`, '/pids');
    assert.ok(isProcessAlive(pids.pid) && isProcessAlive(pids.child));
    remember(pod);
    const deleted = await restRequest(admin, 'DELETE', `/api/v1/namespaces/${ns}/pods/graceful`);
    assert.equal(deleted.status, 200);
    await waitGone('graceful');
    assert.equal(await readFile(marker, 'utf8'), `SIGTERM ${pids.pid}\n`);
    assert.equal(isProcessAlive(pids.pid), false);
    await waitFor('the child in the same process group to be dead', () => !isProcessAlive(pids.child));
  });

  it("keeps a Pod whose readiness probe fails unready, and out of its Service's ready endpoints", async () => {
    const labels = { app: 'picky' };
    await create(`/api/v1/namespaces/${ns}/services`, {
      metadata: { name: 'picky' },
      spec: { selector: labels, ports: [{ port: 8080 }] },
    });
    const probe = { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1, failureThreshold: 1 };
    await create(
      `/api/v1/namespaces/${ns}/pods`,
      podSpec('picky-no', [container({ env: [{ name: 'READY', value: 'false' }], readinessProbe: probe })], {}, labels),
    );
    const running = await waitFor(
      'picky-no to run',
      async () => {
        const pod = await getPod('picky-no');
        return pod?.status?.containerStatuses?.[0]?.state?.running ? pod : undefined;
      },
      60_000,
    );
    const podIP = running.status?.podIP ?? '';
    await waitFor(
      'three readiness probes',
      async () => (await http<{ readyHits: number }>(`${podIP}:8080`, '/pids')).readyHits >= 3,
    );
    const pod = await getPod('picky-no');
    assert.equal(condition(pod, 'Ready'), 'False');
    assert.equal(condition(pod, 'ContainersReady'), 'False');
    assert.equal(pod?.status?.containerStatuses?.[0]?.ready, false);
    assert.deepEqual(
      (await serviceEndpoints(cp, ns, 'picky')).map((e) => [e.pod, e.ready]),
      [['picky-no', false]],
    );
    await assert.rejects(serviceAddress(cp, ns, 'picky', undefined, { timeoutMs: 0 }), /no ready endpoint/);
    // A reader kept across changes sees each one: the same lookups a client repeats in a failover.
    const reader = new ServiceEndpointReader(cp);
    try {
      assert.deepEqual(
        (await reader.endpoints(ns, 'picky')).map((e) => [e.pod, e.ready]),
        [['picky-no', false]],
      );
      await create(
        `/api/v1/namespaces/${ns}/pods`,
        podSpec('picky-yes', [container({ readinessProbe: probe })], {}, labels),
      );
      const ready = await waitReady('picky-yes');
      assert.equal(await serviceAddress(cp, ns, 'picky'), `${ready.status?.podIP}:8080`);
      assert.deepEqual(
        (await reader.endpoints(ns, 'picky', 8080)).map((e) => [e.pod, e.ready, e.address]),
        [
          ['picky-no', false, `${podIP}:8080`],
          ['picky-yes', true, `${ready.status?.podIP}:8080`],
        ],
      );
      await assert.rejects(reader.endpoints(ns, 'no-such-service'), /Service .*\/no-such-service does not exist/);
      // From the watch cache: the same view, at most a few ms behind.
      const cached = new ServiceEndpointReader(cp, { watchCache: true });
      try {
        const seen = await waitFor('the watch cache to show picky-yes ready', async () => {
          const endpoints = await cached.endpoints(ns, 'picky', 8080);
          return endpoints.some((e) => e.pod === 'picky-yes' && e.ready) ? endpoints : undefined;
        });
        assert.deepEqual(
          seen.map((e) => e.pod),
          ['picky-no', 'picky-yes'],
        );
      } finally {
        await cached.close();
      }
      remember(ready);
    } finally {
      await reader.close();
    }
    remember(running);
  });

  it('reports images it cannot run and commands it cannot resolve, naming Pod and container', async () => {
    await create(
      `/api/v1/namespaces/${ns}/pods`,
      podSpec('unmapped', [container({ image: 'docker.io/library/nginx:1' })]),
    );
    await create(
      `/api/v1/namespaces/${ns}/pods`,
      podSpec('bad-command', [container({ name: 'agent', command: ['/usr/local/bin/agent'] })]),
    );
    const waiting = async (name: string) =>
      waitFor(`${name} to report why it waits`, async () => {
        const state = (await getPod(name))?.status?.containerStatuses?.[0]?.state?.waiting;
        return state?.reason && state.reason !== 'ContainerCreating' ? state : undefined;
      });
    const unmapped = await waiting('unmapped');
    assert.equal(unmapped.reason, 'ErrImagePull');
    assert.match(unmapped.message ?? '', /docker\.io\/library\/nginx:1.*not mapped/);
    const bad = await waiting('bad-command');
    assert.equal(bad.reason, 'CreateContainerError');
    assert.match(bad.message ?? '', /Pod pn\/bad-command container "agent".*\/usr\/local\/bin\/agent/);
    assert.equal((await getPod('bad-command'))?.status?.phase, 'Pending');
  });

  it('stop() leaves no container process and no data directory behind', async () => {
    for (const c of cp.processNodes.flatMap((n) => n.containers())) for (const pid of c.pids) everyPid.add(pid);
    const live = [...everyPid].filter(isProcessAlive);
    assert.ok(live.length >= 5, `several containers still run before stop (${live.length})`);
    const dataDir = cp.dataDir ?? '';
    await cp.stop();
    for (const pid of everyPid) assert.equal(isProcessAlive(pid), false, `PID ${pid} is dead`);
    await assert.rejects(access(dataDir));
  });
});
