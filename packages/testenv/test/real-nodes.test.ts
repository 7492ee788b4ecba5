import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Event } from 'kubernetes-types/core/v1.js';
import type { EndpointSlice } from 'kubernetes-types/discovery/v1.js';
import { ensureNodeTools } from '../src/binaries/ensure-node-tools.js';
import { type ControlPlane, containerOutput, startControlPlane } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { realNodesUnsupportedReason } from '../src/real-node/real-nodes.js';
import { type RestTarget, restRequest, restTargetFromKubeconfig } from '../src/rest.js';
import { ensureTestImages, type TestImages } from '../src/test-images/ensure-test-images.js';
import { firstLine, waitFor } from './helpers.js';

const exec = promisify(execFile);

/** The fields of a running Pod these tests read (set on every Pod a kubelet runs). */
interface RunningPod {
  metadata: { name: string; uid: string };
  spec: { nodeName: string };
  status: {
    podIP: string;
    conditions?: { type: string; status: string }[];
    containerStatuses: { containerID: string; ready?: boolean }[];
  };
}
const ns = 'real';
const crashFixture = fileURLToPath(new URL('./fixtures/real-node-and-hold.js', import.meta.url));
const unsupported = await realNodesUnsupportedReason();

/** Every real-node network of every slot: bridges 172.30.k.0/24, Pods and Services 10.(128+k).0.0/16. */
const ALL_RANGES = ['172.30.0.0/16', '10.128.0.0/10'];
const LEAK_TABLE = `kanri_leak_${process.pid}`;

async function defaultInterface(): Promise<string> {
  const { stdout } = await exec('ip', ['route', 'show', 'default']);
  const name = /\bdev (\S+)/.exec(stdout)?.[1];
  assert.ok(name, `no default route on this machine: ${stdout}`);
  return name;
}

/** Counts, per device, every packet to the real-node ranges sent or forwarded through it. */
async function installLeakCounter(nft: (args: string[]) => Promise<string>, devices: readonly string[]): Promise<void> {
  await nft(['add', 'table', 'inet', LEAK_TABLE]);
  await nft([
    'add',
    'chain',
    'inet',
    LEAK_TABLE,
    'out',
    '{ type filter hook postrouting priority 0 ; policy accept ; }',
  ]);
  for (const device of devices) {
    await nft([
      'add',
      'rule',
      'inet',
      LEAK_TABLE,
      'out',
      'oifname',
      device,
      'ip',
      'daddr',
      `{ ${ALL_RANGES.join(', ')} }`,
      'counter',
    ]);
  }
}

/** The counter of the rule for `device`. */
async function packetsOut(nft: (args: string[]) => Promise<string>, device: string): Promise<number> {
  const listing = await nft(['list', 'table', 'inet', LEAK_TABLE]);
  const line = listing.split('\n').find((l) => l.includes(`oifname "${device}"`));
  const match = line && /counter packets (\d+)/.exec(line);
  assert.ok(match, `no counter for ${device}:\n${listing}`);
  return Number(match[1]);
}

/** Every process in the cgroups of the nodes whose cgroup roots start with `prefix` (freezer hierarchy). */
async function cgroupPids(prefix: string): Promise<number[]> {
  const pids: number[] = [];
  const walk = async (dir: string): Promise<void> => {
    const procs = await readFile(`${dir}/cgroup.procs`, 'utf8').catch(() => '');
    pids.push(...procs.split('\n').filter(Boolean).map(Number));
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(`${dir}/${entry.name}`);
    }
  };
  for (const root of await readdir('/sys/fs/cgroup/freezer')) {
    if (root.startsWith(prefix)) await walk(`/sys/fs/cgroup/freezer/${root}`);
  }
  return pids;
}

/** The host's view of what the nodes could leave behind. */
async function hostState() {
  const links = (await exec('ip', ['-o', 'link', 'show'])).stdout
    .split('\n')
    .map((l) => l.split(':')[1]?.trim().split('@')[0])
    .filter((name): name is string => Boolean(name?.startsWith('kanri')));
  const cgroups: string[] = [];
  for (const hierarchy of await readdir('/sys/fs/cgroup')) {
    const entries = await readdir(`/sys/fs/cgroup/${hierarchy}`).catch(() => []);
    cgroups.push(...entries.filter((e) => e.startsWith('kanri-s')).map((e) => `${hierarchy}/${e}`));
  }
  return {
    routes: (await exec('ip', ['route', 'show'])).stdout,
    links,
    cgroups,
    mounts: await readFile('/proc/self/mountinfo', 'utf8'),
  };
}

/** Network and mount namespaces of live processes (by inode), to tell which ones the nodes left behind. */
async function namespaceInodes(): Promise<Set<string>> {
  const found = new Set<string>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    for (const kind of ['net', 'mnt']) {
      const link = await exec('readlink', [`/proc/${entry}/ns/${kind}`]).catch(() => undefined);
      if (link) found.add(link.stdout.trim());
    }
  }
  return found;
}

/** PIDs of the CoreDNS processes whose Corefile is under `dataDir`. */
async function corednsPids(dataDir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (argv[0]?.endsWith('/coredns') && argv.some((a) => a.startsWith(dataDir))) pids.push(Number(entry));
  }
  return pids;
}

function deployment(images: TestImages) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'echo', namespace: ns },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'echo' } },
      template: {
        metadata: { labels: { app: 'echo' } },
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'echo',
              image: images.echo.ref,
              imagePullPolicy: 'Never',
              ports: [{ name: 'http', containerPort: 8080 }],
              env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
            },
          ],
        },
      },
    },
  };
}

describe('real nodes: kubelet, containerd, kube-proxy and the NetworkPolicy enforcer', { skip: unsupported }, () => {
  let cp: ControlPlane;
  let api: RestTarget;
  let images: TestImages;
  let nft: (args: string[]) => Promise<string>;
  let before_: Awaited<ReturnType<typeof hostState>>;
  let namespacesBefore: Set<string>;
  let rulesBefore: string;
  let device: string;
  /** The nodes' own network and mount namespaces, read while they run. */
  const nodeNamespaces = new Set<string>();
  const CONTROL_DEVICE = `kanri-lc${process.pid % 100000}`;
  const CONTROL_ADDRESS = '10.191.255.77';

  before(async () => {
    images = await ensureTestImages();
    const tools = await ensureNodeTools();
    nft = async (args) => (await exec(`${tools.binDir}/nft`, args, { env: { ...process.env, ...tools.env } })).stdout;
    before_ = await hostState();
    namespacesBefore = await namespaceInodes();
    rulesBefore = await nft(['list', 'ruleset']);
    device = await defaultInterface();
    // Before anything can send: every packet from here on is counted. The same rule on a bridge
    // without ports (which drops what it is given) must count a packet routed to it, or the
    // counter on the real interface proves nothing.
    await exec('ip', ['link', 'add', CONTROL_DEVICE, 'type', 'bridge']);
    await exec('ip', ['link', 'set', CONTROL_DEVICE, 'up']);
    await exec('ip', ['route', 'add', `${CONTROL_ADDRESS}/32`, 'dev', CONTROL_DEVICE]);
    await installLeakCounter(nft, [device, CONTROL_DEVICE]);
    cp = await startControlPlane({ realNodes: { count: 2, imageArchives: [images.echo.archive] } });
    api = restTargetFromKubeconfig(cp.kubeconfig);
    for (const node of cp.realNodes) {
      for (const kind of ['net', 'mnt']) {
        nodeNamespaces.add((await exec('readlink', [`/proc/${node.namespacePid}/ns/${kind}`])).stdout.trim());
      }
    }
    await restRequest(api, 'POST', '/api/v1/namespaces', { metadata: { name: ns } });
  });

  after(async () => {
    await api?.dispatcher.close();
    await cp?.stop();
    await nft?.(['delete', 'table', 'inet', LEAK_TABLE]).catch(() => {});
    await exec('ip', ['link', 'del', CONTROL_DEVICE]).catch(() => {});
  });

  /** `echo-server get url` in `pod` through the API server, the kubelet and containerd (the image has no shell). */
  async function getFromPod(pod: string, url: string, namespace = ns): Promise<{ ok: boolean; output: string }> {
    const kubectl = cp.binaries.kubectl;
    assert.ok(kubectl);
    try {
      const { stdout } = await exec(kubectl, [
        '--kubeconfig',
        cp.kubeconfigPath,
        '-n',
        namespace,
        'exec',
        pod,
        '--',
        '/echo-server',
        'get',
        url,
      ]);
      return { ok: true, output: stdout };
    } catch (error) {
      return { ok: false, output: String((error as { stderr?: string }).stderr ?? error) };
    }
  }

  /** A new connection each time (no keep-alive), so that kube-proxy picks a backend for each request. */
  function getFromHost(url: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const request = http.get(url, { agent: false, timeout: 5_000 }, (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () =>
          response.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${response.statusCode}`)),
        );
      });
      request.on('timeout', () => request.destroy(new Error(`${url}: no answer within 5 s`)));
      request.on('error', reject);
    });
  }

  it('runs a Deployment of a real image to Ready through the kubelets, with real Pod IPs in its EndpointSlice', async () => {
    const network = cp.realNodeNetwork;
    assert.ok(network);
    assert.equal(
      (await restRequest(api, 'POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deployment(images))).status,
      201,
    );
    const pods = await waitFor(
      'three echo Pods Ready',
      async () => {
        const list = await restRequest<{ items: any[] }>(
          api,
          'GET',
          `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`,
        );
        const ready = list.body.items.filter((p) =>
          p.status?.conditions?.some(
            (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
          ),
        );
        assert.equal(ready.length, 3, `${ready.length} of ${list.body.items.length} Ready`);
        return ready;
      },
      120_000,
    );
    const nodes = new Set(pods.map((p) => p.spec.nodeName));
    assert.deepEqual([...nodes].sort(), ['real-node-0', 'real-node-1'], 'the scheduler spreads them over both nodes');
    for (const pod of pods) {
      const node = cp.realNodes.find((n) => n.name === pod.spec.nodeName);
      const [prefix] = node?.podCidr.split('.0/24') ?? [];
      assert.ok(
        pod.status.podIP.startsWith(`${prefix}.`),
        `${pod.metadata.name}: ${pod.status.podIP} not in ${node?.podCidr}`,
      );
      // The kubelet reports the readiness probe's run: a probe through it, not a Pod marked Ready by a fake.
      assert.ok(pod.status.containerStatuses[0].containerID.startsWith('containerd://'));
    }
    const service = {
      metadata: { name: 'echo', namespace: ns },
      spec: { selector: { app: 'echo' }, ports: [{ port: 80, targetPort: 'http' }] },
    };
    assert.equal((await restRequest(api, 'POST', `/api/v1/namespaces/${ns}/services`, service)).status, 201);
    const slices = await waitFor('the EndpointSlice lists every Pod', async () => {
      const list = await restRequest<{ items: EndpointSlice[] }>(
        api,
        'GET',
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Decho`,
      );
      const addresses = list.body.items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
      assert.deepEqual(addresses.sort(), pods.map((p) => p.status.podIP).sort());
      return addresses;
    });
    assert.equal(slices.length, 3);
    const events = await restRequest<{ items: Event[] }>(api, 'GET', `/api/v1/namespaces/${ns}/events`);
    const loopback = events.body.items.filter((e) => /loopback/i.test(e.message ?? ''));
    assert.deepEqual(loopback, [], 'no Event complains of a loopback address');
    for (const node of cp.realNodes) {
      // A misspelt field is only a warning to the kubelet, which then runs with its default.
      const kubelet = node.processes.find((p) => p.name.endsWith(' kubelet'));
      assert.ok(kubelet, `${node.name} runs a kubelet`);
      assert.doesNotMatch(await readFile(kubelet.logFile, 'utf8'), /strict decoding error/, `${node.name}'s kubelet`);
    }
    // What each container printed, read back from its node's log files as a test reads an agent's.
    for (const pod of pods) {
      const node = cp.realNodes.find((n) => n.name === pod.spec.nodeName);
      assert.ok(node);
      assert.deepEqual(await containerOutput(node, ns, pod.metadata.name, 'echo'), ['echo-server: listening on :8080']);
    }
  });
  it('reaches every Pod through the Service and kube-proxy, from the host and from another Pod', async () => {
    const service = await restRequest<{ spec: { clusterIP: string } }>(
      api,
      'GET',
      `/api/v1/namespaces/${ns}/services/echo`,
    );
    const clusterIp: string = service.body.spec.clusterIP;
    assert.ok(cp.realNodeNetwork && clusterIp.startsWith(cp.realNodeNetwork.serviceCidr.split('.0/24')[0] ?? '-'));
    const pods = (
      await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
    ).body.items;
    const names = new Set(pods.map((p) => p.metadata.name as string));
    const fromHost = new Set<string>();
    await waitFor('the host reaches all three Pods through the ClusterIP', async () => {
      fromHost.add(JSON.parse(await getFromHost(`http://${clusterIp}/`)).hostname);
      assert.deepEqual([...fromHost].sort(), [...names].sort());
      return true;
    });
    // From a Pod on real-node-1, so that some answers come from the other node's Pods.
    const client = pods.find((p) => p.spec.nodeName === 'real-node-1');
    assert.ok(client);
    const fromPod = new Set<string>();
    await waitFor('a Pod reaches all three Pods through the Service', async () => {
      const answer = await getFromPod(client.metadata.name, `http://${clusterIp}/`);
      assert.ok(answer.ok, answer.output);
      fromPod.add(JSON.parse(answer.output).hostname);
      assert.deepEqual([...fromPod].sort(), [...names].sort());
      return true;
    });
  });

  it('resolves cluster names through the cluster DNS, and answers NXDOMAIN for every other name', async () => {
    const network = cp.realNodeNetwork;
    assert.ok(network);
    const pods = (
      await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
    ).body.items;
    const client = pods.find((p) => p.spec.nodeName === 'real-node-1');
    assert.ok(client);
    const names = new Set(pods.map((p) => p.metadata.name));
    // By the Service's full name and by its short one (the Pod's search list), through kube-proxy.
    for (const host of ['echo.real.svc.cluster.local', 'echo.real.svc', 'echo']) {
      const answer = await getFromPod(client.metadata.name, `http://${host}/`);
      assert.ok(answer.ok, `${host}: ${answer.output}`);
      assert.ok(names.has(JSON.parse(answer.output).hostname), answer.output);
    }
    // Port 1 is no port of the Service, so the dial fails, naming the address the name resolved to.
    const kubernetes = await getFromPod(client.metadata.name, 'http://kubernetes.default.svc.cluster.local:1/');
    assert.equal(kubernetes.ok, false);
    assert.match(
      kubernetes.output,
      new RegExp(`dial tcp ${network.kubernetesServiceIp.replaceAll('.', '\\.')}:1\\b`),
      kubernetes.output,
    );
    // NXDOMAIN is Go's "no such host"; a forward to an unreachable upstream would be SERVFAIL
    // ("server misbehaving"), and a Pod without cluster DNS would find no server at all.
    for (const host of ['example.com', 'nothing.real.svc.cluster.local']) {
      const outside = await getFromPod(client.metadata.name, `http://${host}/`);
      assert.equal(outside.ok, false);
      assert.match(outside.output, new RegExp(`lookup ${host.replaceAll('.', '\\.')}.* no such host`), outside.output);
    }
    const node = cp.realNodes.find((n) => n.name === client.spec.nodeName);
    assert.ok(node);
    const sandboxes = join(node.input.dir, 'containerd', 'root', 'io.containerd.grpc.v1.cri', 'sandboxes');
    const resolvConfs = await Promise.all(
      (await readdir(sandboxes)).map((id) => readFile(join(sandboxes, id, 'resolv.conf'), 'utf8').catch(() => '')),
    );
    const clusterFirst = resolvConfs.filter((text) => text.includes(`search ${ns}.svc.cluster.local `));
    assert.ok(clusterFirst.length >= 1, resolvConfs.join('---\n'));
    for (const text of clusterFirst) {
      const lines = text.trim().split('\n').sort();
      assert.deepEqual(lines, [
        `nameserver ${network.clusterDnsIp}`,
        'options ndots:5',
        `search ${ns}.svc.cluster.local svc.cluster.local cluster.local`,
      ]);
    }
    const events = await restRequest<{ items: Event[] }>(api, 'GET', '/api/v1/events');
    assert.deepEqual(
      events.body.items.filter((e) => e.reason === 'MissingClusterDNS').map((e) => e.message),
      [],
      'no kubelet warns MissingClusterDNS',
    );
  });

  it('enforces NetworkPolicies on every node: only the Pods a policy admits reach the Pods it selects', async () => {
    const other = `${ns}-other`;
    assert.equal((await restRequest(api, 'POST', '/api/v1/namespaces', { metadata: { name: other } })).status, 201);
    // Clients from the echo image on real-node-1: the echo Pods on real-node-1 are reached across
    // its bridge, those on real-node-0 through both nodes' routes.
    const clients = [
      { name: 'granted', namespace: ns, access: 'granted' },
      { name: 'denied', namespace: ns, access: 'none' },
      { name: 'granted-elsewhere', namespace: other, access: 'granted' },
    ];
    for (const c of clients) {
      const pod = {
        metadata: { name: c.name, namespace: c.namespace, labels: { access: c.access } },
        spec: {
          nodeName: 'real-node-1',
          automountServiceAccountToken: false,
          containers: [{ name: 'client', image: images.echo.ref, imagePullPolicy: 'Never' }],
        },
      };
      assert.equal((await restRequest(api, 'POST', `/api/v1/namespaces/${c.namespace}/pods`, pod)).status, 201);
    }
    await waitFor('the client Pods running', async () => {
      for (const c of clients) {
        const pod = await restRequest<RunningPod>(api, 'GET', `/api/v1/namespaces/${c.namespace}/pods/${c.name}`);
        assert.ok(pod.body.status?.containerStatuses?.[0]?.ready, `${c.namespace}/${c.name} not running yet`);
      }
      return true;
    });
    const targets = (
      await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
    ).body.items;
    assert.deepEqual([...new Set(targets.map((t) => t.spec.nodeName))].sort(), ['real-node-0', 'real-node-1']);
    /** Which echo Pods `client` reaches on port 8080. */
    const reached = async (c: (typeof clients)[number]) => {
      const answers = await Promise.all(
        targets.map((t) => getFromPod(c.name, `http://${t.status.podIP}:8080/`, c.namespace)),
      );
      return answers.filter((a) => a.ok).length;
    };
    for (const c of clients)
      assert.equal(await reached(c), targets.length, `${c.name} reaches every Pod before the policy`);

    const policy = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'echo-from-granted', namespace: ns },
      spec: {
        podSelector: { matchLabels: { app: 'echo' } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { access: 'granted' } } }], ports: [{ protocol: 'TCP', port: 8080 }] },
        ],
      },
    };
    const policies = `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`;
    assert.equal((await restRequest(api, 'POST', policies, policy)).status, 201);
    await waitFor('the policy in force on both nodes', async () => {
      assert.equal(await reached(clients[1] as (typeof clients)[number]), 0, 'an unlabelled Pod still gets through');
      return true;
    });
    assert.equal(await reached(clients[0] as (typeof clients)[number]), targets.length, 'the admitted Pod reaches all');
    assert.equal(
      await reached(clients[2] as (typeof clients)[number]),
      0,
      'a podSelector admits Pods of the policy’s own namespace only, whatever their labels elsewhere',
    );
    const stillReady = (
      await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
    ).body.items.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    assert.equal(
      stillReady.length,
      targets.length,
      'the kubelet probes from the node itself, which the policy lets in',
    );

    // Removing the policy lifts it: the enforcer follows the API both ways (and later tests see open Pods).
    assert.equal((await restRequest(api, 'DELETE', `${policies}/echo-from-granted`)).status, 200);
    await waitFor('the policy lifted', async () => {
      assert.equal(await reached(clients[1] as (typeof clients)[number]), targets.length);
      return true;
    });
    for (const c of clients)
      await restRequest(api, 'DELETE', `/api/v1/namespaces/${c.namespace}/pods/${c.name}?gracePeriodSeconds=0`);
  });

  it('lets no packet to the Pod and Service ranges leave through the default interface', async () => {
    const network = cp.realNodeNetwork;
    assert.ok(network);
    const pods = (
      await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
    ).body.items;
    // Addresses of the slot that nothing answers: the blackhole must drop them on the host.
    const unassignedPod = `${network.supernet.split('.0.0/16')[0]}.99.9`;
    // ClusterIPs are allocated at random: take an address of the range that no Service holds.
    const services = await restRequest<{ items: { spec: { clusterIP: string } }[] }>(api, 'GET', '/api/v1/services');
    const taken = new Set(services.body.items.map((svc) => svc.spec.clusterIP));
    const servicePrefix = network.serviceCidr.split('.0/24')[0];
    const unusedService = [250, 249, 248].map((last) => `${servicePrefix}.${last}`).find((a) => !taken.has(a));
    assert.ok(unusedService);
    for (const address of [unassignedPod, unusedService]) {
      await assert.rejects(getFromHost(`http://${address}/`), `${address} must not answer`);
    }
    // A Pod cannot reach beyond the machine at all: its node has no default route.
    const [somePod] = pods;
    assert.ok(somePod);
    // TEST-NET-2: an address of no real network, which only a default route could lead to.
    const outward = await getFromPod(somePod.metadata.name, 'http://198.51.100.1/');
    assert.equal(outward.ok, false);
    assert.match(outward.output, /unreachable|no route/i);
    assert.equal(await packetsOut(nft, device), 0, `packets to ${ALL_RANGES.join(', ')} left through ${device}`);
    // The same rule on the portless bridge counts what is routed there: the counter works.
    await assert.rejects(getFromHost(`http://${CONTROL_ADDRESS}/`));
    assert.ok((await packetsOut(nft, CONTROL_DEVICE)) >= 1, 'the control counter saw no packet');
  });

  it('injects failures: a killed container restarts, a stopped kubelet leaves its Pods running, a cut link silences the node', async () => {
    const node = cp.realNodes.find((n) => n.name === 'real-node-0');
    assert.ok(node);
    const podsPath = `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho&fieldSelector=spec.nodeName%3Dreal-node-0`;
    const [pod] = (await restRequest<{ items: RunningPod[] }>(api, 'GET', podsPath)).body.items;
    assert.ok(pod);
    const url = `http://${pod.status.podIP}:8080/healthz`;
    const status = async () =>
      (await restRequest<RunningPod>(api, 'GET', `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`)).body.status;

    const [first] = pod.status.containerStatuses;
    assert.ok(first);
    const killed = await node.killContainer(first.containerID);
    assert.ok(killed.length >= 1);
    await waitFor(
      'the kubelet to restart the killed container',
      async () => {
        const [container] = (await status()).containerStatuses as (RunningPod['status']['containerStatuses'][0] & {
          restartCount: number;
          ready: boolean;
        })[];
        return (
          container && container.restartCount >= 1 && container.ready && container.containerID !== first.containerID
        );
      },
      60_000,
    );
    assert.equal(await getFromHost(url), 'ok');

    const kubeletPid = node.kubelet?.pid;
    await node.stopKubelet();
    assert.equal(node.kubelet?.running, false);
    assert.equal(await getFromHost(url), 'ok', 'the Pod runs on without its kubelet');
    const containerBefore = (await status()).containerStatuses[0]?.containerID;
    const restarted = Date.now();
    node.startKubelet();
    assert.notEqual(node.kubelet?.pid, kubeletPid);
    await waitFor('the new kubelet to report the node', async () => {
      const n = await restRequest<{ status: { conditions: { type: string; lastHeartbeatTime: string }[] } }>(
        api,
        'GET',
        '/api/v1/nodes/real-node-0',
      );
      const ready = n.body.status.conditions.find((c) => c.type === 'Ready');
      return ready && Date.parse(ready.lastHeartbeatTime) >= restarted - 1_000;
    });
    assert.equal(
      (await status()).containerStatuses[0]?.containerID,
      containerBefore,
      'it adopted the running container',
    );

    await node.disconnect();
    await assert.rejects(getFromHost(url), 'a disconnected node answers nothing');
    await node.reconnect();
    await waitFor('the node to answer again', async () => (await getFromHost(url)) === 'ok');
  });

  it('powers a node off: every process in its cgroup dies at once, its Pods go silent, the other node serves on', async () => {
    const network = cp.realNodeNetwork;
    const node = cp.realNodes.find((n) => n.name === 'real-node-1');
    assert.ok(network && node);
    const pods = (
      await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
    ).body.items;
    const gone = pods.find((p) => p.spec.nodeName === 'real-node-1');
    const stays = pods.find((p) => p.spec.nodeName === 'real-node-0');
    assert.ok(gone && stays);
    const processes = await cgroupPids(`kanri-s${network.slot}-real-node-1`);
    // containerd, the kubelet, kube-proxy and the namespace holder, and per Pod a shim, pause and the server.
    assert.ok(processes.length >= 6, `${processes.length} processes in real-node-1's cgroup`);
    await node.powerOff();
    assert.deepEqual(
      processes.filter((pid) => isProcessAlive(pid)),
      [],
    );
    assert.equal(node.namespacePid, undefined, 'its namespaces are gone with their holder');
    await assert.rejects(getFromHost(`http://${gone.status.podIP}:8080/healthz`));
    assert.equal(await getFromHost(`http://${stays.status.podIP}:8080/healthz`), 'ok');
  });

  it('powers the node on again: it is Ready, and its Pod runs again in a new sandbox and answers', async () => {
    const node = cp.realNodes.find((n) => n.name === 'real-node-1');
    assert.ok(node);
    const podsOnNode = async () =>
      (
        await restRequest<{ items: RunningPod[] }>(api, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho`)
      ).body.items.filter((p) => p.spec.nodeName === 'real-node-1');
    const [before] = await podsOnNode();
    assert.ok(before, 'a Pod is still bound to the powered-off node');
    const oldContainer = before.status.containerStatuses?.[0]?.containerID;
    await node.powerOn();
    assert.ok(node.namespacePid, 'new namespaces');
    const after = await waitFor(
      'the Pod on real-node-1 to run again in a new container',
      async () => {
        const [pod] = await podsOnNode();
        const container = pod?.status.containerStatuses?.[0];
        return pod?.metadata.uid === before.metadata.uid &&
          container?.ready &&
          container.containerID &&
          container.containerID !== oldContainer
          ? pod
          : undefined;
      },
      120_000,
      500,
    );
    assert.equal(await getFromHost(`http://${after.status.podIP}:8080/healthz`), 'ok');
    const nodeObject = await restRequest<{ status: { conditions: { type: string; status: string }[] } }>(
      api,
      'GET',
      '/api/v1/nodes/real-node-1',
    );
    assert.equal(nodeObject.body.status.conditions.find((c) => c.type === 'Ready')?.status, 'True');
  });

  it('leaves no process, namespace, mount, bridge, route, cgroup or rule behind after stop()', async () => {
    const network = cp.realNodeNetwork;
    assert.ok(network);
    // real-node-0 is still on: its holder, containerd, kubelet and kube-proxy, and per echo Pod at
    // least the sandbox and the server (how many Pods it got is the scheduler's choice).
    const pids = await cgroupPids(`kanri-s${network.slot}-`);
    const podsOnNode0 = (
      await restRequest<{ items: RunningPod[] }>(
        api,
        'GET',
        `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Decho&fieldSelector=spec.nodeName%3Dreal-node-0`,
      )
    ).body.items.length;
    assert.ok(podsOnNode0 >= 1);
    assert.ok(
      pids.length >= 4 + 2 * podsOnNode0,
      `${pids.length} processes in the nodes' cgroups, with ${podsOnNode0} echo Pods on real-node-0`,
    );
    assert.equal(nodeNamespaces.size, 4, 'each node had its own network and mount namespace');
    const during = await hostState();
    const dataDir = cp.dataDir ?? '-';
    assert.ok(during.links.includes(network.bridge), `the bridge ${network.bridge} exists while the nodes run`);
    assert.ok(during.cgroups.length > 0);
    const coredns = await corednsPids(dataDir);
    assert.equal(coredns.length, 1, 'one CoreDNS serves the control plane');
    await cp.stop();
    assert.deepEqual(
      coredns.filter((pid) => isProcessAlive(pid)),
      [],
      'CoreDNS has stopped',
    );
    const after_ = await hostState();
    assert.deepEqual(
      pids.filter((pid) => isProcessAlive(pid)),
      [],
      'no process of a node runs',
    );
    const left = await namespaceInodes();
    assert.deepEqual(
      [...nodeNamespaces].filter((n) => left.has(n)),
      [],
      'no process holds a node namespace',
    );
    assert.deepEqual(
      [...left].filter((n) => !namespacesBefore.has(n) && nodeNamespaces.has(n)),
      [],
    );
    // Only what is this control plane's: other files' real nodes may start and stop meanwhile.
    const ours = (link: string) => link === network.bridge || link.startsWith(`kanri-${network.slot}-n`);
    assert.ok(
      during.links.some((l) => l.startsWith(`kanri-${network.slot}-n`)),
      'the check sees the host veths',
    );
    assert.deepEqual(after_.links.filter(ours), [], 'no interface of this control plane remains');
    assert.ok(
      during.cgroups.some((c) => c.includes(`/kanri-s${network.slot}-`)),
      'the check sees the cgroups',
    );
    assert.deepEqual(
      after_.cgroups.filter((c) => c.includes(`/kanri-s${network.slot}-`)),
      [],
      'no node cgroup remains',
    );
    const slotRoutes = (routes: string) =>
      routes.split('\n').filter((l) => l.includes(`10.${128 + network.slot}.`) || l.includes(network.bridge));
    assert.ok(slotRoutes(during.routes).length >= 3, 'the check sees the blackhole and the node routes');
    assert.deepEqual(slotRoutes(after_.routes), [], 'no route of this slot remains');
    // Image builds (buildah's overlay mounts in the cache) may run in another test file meanwhile.
    const added = after_.mounts
      .split('\n')
      .filter((line) => !before_.mounts.includes(line) && !line.includes('/buildah/storage/'));
    assert.deepEqual(
      added.filter((line) => line.includes(dataDir) || /kanri-run|overlay|\/run\/netns|containerd|kubelet/.test(line)),
      [],
      "the host mount table holds none of the nodes' mounts",
    );
    await nft(['delete', 'table', 'inet', LEAK_TABLE]);
    assert.equal(await nft(['list', 'ruleset']), rulesBefore, 'no nftables (or iptables-nft) rule remains');
    assert.deepEqual(
      await readdir('/run/kanri-testenv').then((f) => f.filter((x) => x === `slot-${network.slot}.pid`)),
      [],
    );
  });
});

// In this file, not one of its own: files run two at a time, and another file's claim of a slot
// would reclaim the killed run's slot before this test has seen its orphans.
describe('real nodes after the process that ran them was killed', { skip: unsupported }, () => {
  it('the next start reclaims the slot: the orphaned containers die, the old bridge and routes go', async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-rn-orphan-'));
    const child = spawn(process.execPath, [crashFixture, base], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pids: number[] = [];
    try {
      const line = await firstLine(child);
      const held = JSON.parse(line as string) as { slot: number; bridge: string; pids: number[] };
      pids = held.pids;
      child.kill('SIGKILL');
      // The daemons die with it (parent-death signal); the shims and containers daemonised and do not.
      await waitFor('the daemons to die', async () => {
        const { stdout } = await exec('ps', ['-o', 'args=', '-p', pids.join(',')]).catch(() => ({ stdout: '' }));
        return !/kubelet|containerd --config|kube-proxy/.test(stdout);
      });
      const orphans = pids.filter((pid) => isProcessAlive(pid));
      assert.ok(
        orphans.length >= 2,
        `the sandbox and the server outlive their node's daemons: ${orphans.length} alive`,
      );
      const oldLink = (await exec('ip', ['-o', 'link', 'show', held.bridge])).stdout;
      assert.match(oldLink, new RegExp(held.bridge), 'the dead run left its bridge');
      const oldIndex = Number(oldLink.split(':')[0]);

      const next = await startControlPlane({ baseDir: base, realNodes: { count: 1 } });
      try {
        assert.deepEqual(
          pids.filter((pid) => isProcessAlive(pid)),
          [],
          'the orphans are killed when the next run claims a slot',
        );
      } finally {
        await next.stop();
      }
      // Another file's run may have taken the same slot number since: the old bridge is gone when
      // no link of that name has the old one's index.
      const now = await exec('ip', ['-o', 'link', 'show', held.bridge]).then(
        (r) => r.stdout,
        () => '',
      );
      assert.ok(!now.startsWith(`${oldIndex}:`), `the old bridge (index ${oldIndex}) is gone`);
    } finally {
      child.kill('SIGKILL');
      for (const pid of pids) if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
      await rm(base, { recursive: true, force: true });
    }
  });
});
