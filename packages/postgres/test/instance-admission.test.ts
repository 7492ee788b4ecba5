/**
 * Issue 16, finding 1: what an instance's identity may write, against a real API server with the
 * instance Role (contract/instance-rbac.ts) and the admission policies
 * (contract/admission/instance-admission-policy.ts). The identity is the cluster's ServiceAccount with a
 * token bound to one of its Pods, as the kubelet (and testenv's process nodes) give the agent.
 * Each attack is refused with the policy's words; what the agent does is allowed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { parse, stringify } from 'yaml';
import {
  ANNOTATION,
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_KEY,
  ANNOTATION_PGBACKREST_SERVER,
  buildInstanceRoleRules,
  CLONE_GRANT_PREFIX,
  instanceAdmissionPolicies,
  LABEL,
  names,
} from '../src/contract/index.js';

const NS = 'default';

describe('an instance identity’s writes', () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  /** db's instance db-i-0, as its agent authenticates. */
  let agent: KubeClient;
  const pods = () => admin.resource<Pod & KubeObject>('v1', 'Pod');
  const agentPods = () => agent.resource<Pod & KubeObject>('v1', 'Pod');
  const pod = (name: string, labels: Record<string, string>, annotations: Record<string, string> = {}) => ({
    metadata: { name, namespace: NS, labels, annotations },
    spec: {
      serviceAccountName: names.instanceServiceAccount(labels[LABEL.cluster] ?? '').replace(/^-instance$/, 'default'),
      containers: [{ name: 'c', image: 'example/app:1' }],
    },
  });
  const clusterPod = (cluster: string, name: string, role: string) =>
    pod(name, { [LABEL.cluster]: cluster, [LABEL.instance]: name, [LABEL.role]: role }, { [ANNOTATION.status]: '{}' });
  /** The refusal's message, or 'allowed'. */
  const attempt = (write: () => Promise<unknown>) =>
    write().then(
      () => 'allowed',
      (e: unknown) => (e instanceof ApiError ? `${e.statusCode}: ${e.message}` : `not an API error: ${e}`),
    );
  const patch = (name: string, body: unknown) => agentPods().patch(name, body, { namespace: NS, type: 'merge' });

  before(async () => {
    cp = await startControlPlane();
    admin = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    const apply = (o: Record<string, unknown>) =>
      admin.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test', force: true });
    for (const object of instanceAdmissionPolicies()) await apply(object);
    const account = names.instanceServiceAccount('db');
    // No controllers here: the ServiceAccount admission plugin wants `default` to exist for the others.
    for (const name of [account, names.instanceServiceAccount('other'), 'default'])
      await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NS } });
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: account, namespace: NS },
      rules: buildInstanceRoleRules('db', []),
    });
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: account, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: NS }],
    });
    const self = await pods().create(clusterPod('db', 'db-i-0', 'primary'));
    await pods().create(clusterPod('db', 'db-i-1', 'primary'));
    await pods().create(clusterPod('other', 'other-i-0', 'primary'));
    await pods().create(pod('web-0', { app: 'web' }));
    const { status } = (await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/serviceaccounts/${account}/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          expirationSeconds: 3600,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'db-i-0', uid: self.metadata?.uid },
        },
      },
    })) as { status: { token: string } };
    const kubeconfig = parse(await readFile(cp.kubeconfigPath, 'utf8'));
    kubeconfig.users = [{ name: 'agent', user: { token: status.token } }];
    for (const context of kubeconfig.contexts) context.context.user = 'agent';
    // A fresh private directory: at a predictable path in /tmp a planted file or link would get the token.
    const path = join(await mkdtemp(join(cp.dataDir ?? tmpdir(), 'kanri-agent-')), 'kubeconfig');
    await writeFile(path, stringify(kubeconfig), { mode: 0o600 });
    agent = await KubeClient.load({ kubeconfig: path, maxAttempts: 1 });
    // Each policy takes effect once the API server's policy source has seen it and its binding, and
    // compiled them: the Pod policy in force says nothing of the Lease policy applied after it. A
    // dry run goes through admission without writing, so probing leaves no Lease behind.
    const probes = {
      pods: () => patch('web-0', { metadata: { labels: { app: 'x' } } }),
      leases: () =>
        agent
          .resource('coordination.k8s.io/v1', 'Lease')
          .create({ metadata: { name: names.leaderLease('other'), namespace: NS } }, { dryRun: true }),
    };
    for (const [policy, probe] of Object.entries(probes))
      await waitFor(
        `the ${policy} policy to be in force`,
        async () => {
          const outcome = await attempt(probe);
          if (!outcome.startsWith('403')) throw new Error(outcome);
          return outcome;
        },
        30_000,
        250,
      );
  });
  after(async () => {
    await agent?.close();
    await admin?.close();
    await cp?.stop();
  });

  it('may write what the agent writes: its own role label, report and pgBackRest server; another Pod of its cluster off primary', async () => {
    const own = {
      metadata: {
        labels: { [LABEL.role]: 'replica' },
        annotations: { [ANNOTATION.status]: '{"role":"replica"}', [ANNOTATION_PGBACKREST_SERVER]: '{}' },
      },
    };
    assert.equal(await attempt(() => patch('db-i-0', own)), 'allowed');
    assert.equal(
      await attempt(() => patch('db-i-1', { metadata: { labels: { [LABEL.role]: 'replica' } } })),
      'allowed',
    );
    assert.equal(
      await attempt(() =>
        agent
          .resource('coordination.k8s.io/v1', 'Lease')
          .create({ metadata: { name: names.leaderLease('db'), namespace: NS } }),
      ),
      'allowed',
    );
  });

  it('may publish its own pgBackRest key, never a certificate the operator issues, an order of the operator, nor a clone grant (issue 37, finding 4)', async () => {
    const key = '-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n';
    assert.equal(
      await attempt(() => patch('db-i-0', { metadata: { annotations: { [ANNOTATION_PGBACKREST_KEY]: key } } })),
      'allowed',
    );
    // An instance ordering itself to switch over (or restart) would be a request nobody made.
    for (const annotation of [
      ANNOTATION_PGBACKREST_CERTIFICATE,
      ANNOTATION.peerCertificate,
      ANNOTATION.switchoverOrder,
      ANNOTATION.restartPostgres,
    ])
      assert.match(
        await attempt(() => patch('db-i-0', { metadata: { annotations: { [annotation]: 'forged' } } })),
        /^403: .*may change no annotation of its Pod but/,
        annotation,
      );
    // A grant lives on a repo host's Pod, which is never the instance's own.
    const grant = { [`${CLONE_GRANT_PREFIX}db-i-0`]: JSON.stringify({ cluster: 'db', certificate: 'forged' }) };
    assert.match(
      await attempt(() => patch('db-i-1', { metadata: { annotations: grant } })),
      /^403: .*only move the role label of another Pod/,
    );
    assert.equal(
      (await pods().get('db-i-0', { namespace: NS })).metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY],
      key,
    );
  });

  it("refuses taking over other workloads: another cluster's Pod, an application's Pod, any image", async () => {
    // The one spec field a Pod update may change; without the policy, RBAC's pods/patch allows it.
    const swapImage = (name: string) =>
      attempt(() =>
        agentPods().patch(name, [{ op: 'replace', path: '/spec/containers/0/image', value: 'evil/miner:1' }], {
          namespace: NS,
          type: 'json',
        }),
      );
    assert.match(await swapImage('other-i-0'), /^403: .*may change only that cluster's Pods, not other-i-0/);
    assert.match(await swapImage('web-0'), /^403: .*may change only that cluster's Pods, not web-0/);
    assert.match(await swapImage('db-i-1'), /^403: .*may not change a Pod's spec/);
    assert.match(await swapImage('db-i-0'), /^403: .*may not change a Pod's spec/);
    assert.equal((await pods().get('web-0', { namespace: NS })).spec?.containers?.[0]?.image, 'example/app:1');
  });

  it("refuses relabelling itself into another cluster's Services, and forging another instance's report", async () => {
    const relabel = { metadata: { labels: { [LABEL.cluster]: 'other', [LABEL.role]: 'primary' } } };
    assert.match(await attempt(() => patch('db-i-0', relabel)), /^403: .*may change no label of db-i-0 but/);
    const forged = { metadata: { annotations: { [ANNOTATION.status]: '{"role":"replica","receivedLsn":"FF/0"}' } } };
    assert.match(await attempt(() => patch('db-i-1', forged)), /^403: .*only move the role label of another Pod/);
    assert.match(
      await attempt(() => patch('db-i-1', { metadata: { labels: { [LABEL.role]: 'primary', x: 'y' } } })),
      /^403: /,
    );
    assert.equal((await pods().get('db-i-1', { namespace: NS })).metadata?.annotations?.[ANNOTATION.status], '{}');
  });

  it("refuses pre-creating another cluster's Lease", async () => {
    const refused = await attempt(() =>
      agent
        .resource('coordination.k8s.io/v1', 'Lease')
        .create({ metadata: { name: names.leaderLease('other'), namespace: NS } }),
    );
    assert.match(refused, /^403: .*may create only its Lease db-leader/);
  });
});
