/**
 * A process node's host failure: crash() SIGKILLs every container process, descendants that left
 * the container's process group included, and goes silent (the Pod stays Running in the API);
 * recover() re-runs the Pod on the same address. A container's first process dying takes such
 * descendants with it too. And apiProxy cuts one node's Pods off the API server.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { type ControlPlane, PROCESS_NODE_LABEL, startControlPlane } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { type RestTarget, restRequest, restTargetFromKubeconfig } from '../src/rest.js';
import { waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/process-pod.js', import.meta.url));
const IMAGE = 'example.com/kanri/process-pod';
const ns = 'default';

describe('process node crash and recover', { timeout: 180_000 }, () => {
  let cp: ControlPlane;
  let admin: RestTarget;
  let markers: string;
  /** Sessions of their own that only the code under test kills: ended here if a test failed. */
  const escapedPids: number[] = [];

  const getPod = async (name: string) =>
    (await restRequest<Pod>(admin, 'GET', `/api/v1/namespaces/${ns}/pods/${name}`)).body;
  const ready = (pod: Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  const http = async (address: string, path: string) => {
    const response = await fetch(`http://${address}${path}`, { signal: AbortSignal.timeout(10_000) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  before(async () => {
    markers = await mkdtemp(join(tmpdir(), 'kanri-crash-markers-'));
    cp = await startControlPlane({
      controllers: true,
      processNodes: { count: 1, apiProxy: true, images: { [IMAGE]: { entrypoint: [process.execPath, fixture] } } },
    });
    admin = restTargetFromKubeconfig(cp.kubeconfig);
    await waitFor('the default ServiceAccount', async () => {
      const sa = await restRequest(admin, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`);
      return sa.status === 200;
    });
  });

  after(async () => {
    await admin?.dispatcher.close();
    await cp?.stop();
    for (const pid of escapedPids) {
      const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
      if (comm.trim() === 'sleep' && isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    await rm(markers, { recursive: true, force: true });
  });

  it('crash() kills the whole process tree at once and leaves the Pod Running; recover() runs it again', async () => {
    const marker = join(markers, 'term');
    const created = await restRequest(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'host' },
      spec: {
        nodeSelector: { [PROCESS_NODE_LABEL]: 'true' },
        containers: [
          {
            name: 'main',
            image: `${IMAGE}:1`,
            env: [
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'SPAWN_CHILD', value: '1' },
              { name: 'SPAWN_ESCAPED', value: '1' },
              { name: 'TERM_MARKER', value: marker },
            ],
            readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    });
    assert.equal(created.status, 201);
    const before = await waitFor('the Pod to be Ready', async () => {
      const pod = await getPod('host');
      return ready(pod) ? pod : undefined;
    });
    const ip = before.status?.podIP ?? '';
    const pids = await waitFor('the escaped grandchild to start', async () => {
      const body = (await http(`${ip}:8080`, '/pids')).body as { pid: number; child: number; escaped?: number };
      return body.escaped ? (body as typeof body & { escaped: number }) : undefined;
    });
    escapedPids.push(pids.escaped);
    assert.ok(isProcessAlive(pids.escaped));
    const node = cp.processNodes[0];
    assert.ok(node);

    await node.crash();
    // crash() returns once every process has its SIGKILL, not once each has exited: on a loaded
    // machine an exit can trail it (CI saw the escaped grandchild still there). Killed outright is
    // what counts, and the marker below says no SIGTERM came first.
    for (const [pid, what] of [
      [pids.pid, 'the container process'],
      [pids.child, 'its child (same process group)'],
      [pids.escaped, 'its grandchild in a session of its own'],
    ] as const)
      await waitFor(`${what} to be gone`, () => !isProcessAlive(pid), 5_000, 20);
    assert.equal(await readFile(marker, 'utf8').catch(() => ''), '', 'no SIGTERM: it was killed outright');
    await sleep(3_000);
    const during = await getPod('host');
    assert.equal(during.status?.phase, 'Running', 'the API still says Running');
    assert.equal(ready(during), true, 'and Ready: nobody tells the API the host died');
    assert.equal(during.metadata?.resourceVersion, before.metadata?.resourceVersion, 'no status write');
    assert.equal(node.containers().length, 0);

    await node.recover();
    const again = await waitFor('the Pod to run again', async () => {
      const response = await http(`${ip}:8080`, '/pids').catch(() => undefined);
      return response && response.body.pid !== pids.pid ? response.body : undefined;
    });
    assert.ok(isProcessAlive(again.pid as number));
    assert.equal((await getPod('host')).status?.podIP, ip, 'same address after recovery');
    await waitFor('Ready again', async () => ready(await getPod('host')));
  });

  it("apiProxy: the node's Pods reach the API server through the node's proxy, which can cut them off", async () => {
    const node = cp.processNodes[0];
    assert.ok(node?.apiProxy);
    const ip = (await getPod('host')).status?.podIP ?? '';
    const connections = node.apiProxy.connections;
    const ok = await http(`${ip}:8080`, '/whoami');
    assert.equal(ok.status, 200);
    assert.ok(node.apiProxy.connections > connections, 'the request went through the proxy');
    node.apiProxy.refuseNew(true);
    node.apiProxy.dropAll();
    try {
      const cut = await http(`${ip}:8080`, '/whoami');
      assert.equal(cut.status, 500, 'cut off from the API server');
      // The node itself is not cut off: it still sees and serves its Pods.
      assert.equal(ready(await getPod('host')), true);
    } finally {
      node.apiProxy.refuseNew(false);
    }
    assert.equal((await http(`${ip}:8080`, '/whoami')).status, 200);
  });

  it("a container's first process dying takes the descendants that left its group with it", async () => {
    const ip = (await getPod('host')).status?.podIP ?? '';
    type Pids = { pid: number; escaped?: number };
    const first = await waitFor('the escaped grandchild', async () => {
      const body = (await http(`${ip}:8080`, '/pids')).body as Pids;
      return body.escaped ? body : undefined;
    });
    const escaped = first.escaped as number;
    escapedPids.push(escaped);
    assert.ok(isProcessAlive(escaped));
    // Not the group: only the container's first process, as when it crashes on its own.
    process.kill(first.pid, 'SIGKILL');
    // The node restarts the container only after the old run's tree has been killed.
    await waitFor('the container to be restarted', async () => {
      const body = (await http(`${ip}:8080`, '/pids').catch(() => undefined))?.body as Pids | undefined;
      return body && body.pid !== first.pid;
    });
    assert.equal(isProcessAlive(escaped), false, 'the escaped grandchild of the old run is gone');
  });

  it('a graceful stop, where the group ends on SIGTERM before the first process, takes them too', async () => {
    const ip = (await getPod('host')).status?.podIP ?? '';
    const { escaped } = await waitFor('the escaped grandchild', async () => {
      const body = (await http(`${ip}:8080`, '/pids')).body as { escaped?: number };
      return body.escaped ? { escaped: body.escaped } : undefined;
    });
    escapedPids.push(escaped);
    const deleted = await restRequest(admin, 'DELETE', `/api/v1/namespaces/${ns}/pods/host`);
    assert.equal(deleted.status, 200);
    // The node deletes the Pod for good only after its containers have stopped.
    await waitFor('the Pod to be gone', async () => {
      const response = await restRequest(admin, 'GET', `/api/v1/namespaces/${ns}/pods/host`);
      return response.status === 404;
    });
    assert.equal(isProcessAlive(escaped), false, 'the escaped grandchild is gone with its container');
  });
});
