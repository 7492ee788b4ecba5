/**
 * Issue 37, finding 13 and the NetworkPolicy label: what the operator's identity and a namespace
 * user may write, against a real API server with the operator's ClusterRole (`postgresOperator.rbac()`)
 * and its admission policies (`postgresOperator.policies()`). RBAC grants the operator every write
 * on Secrets, ServiceAccounts, Leases and Pods cluster-wide (it must hold what it grants the
 * instances); the owned-writes policies narrow that to what it owns, and the member-label policy
 * keeps a cluster's labels off Pods nobody but the operator made. Each refusal is a 403 naming the
 * policy; what the operator does for a cluster is allowed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import {
  API_VERSION,
  buildInstanceRoleRules,
  KIND,
  LABEL,
  names,
  PGUpgradeResource,
  PostgresBackupResource,
  type PostgresCluster,
  PostgresClusterResource,
  postgresOperator,
} from '../src/index.js';
import { repoHostPod, repoHostRbac } from '../src/operator/builders/repo-host.js';

const TEAM = 'team';
const EMPTY = 'empty';
const OPERATOR_USER = `system:serviceaccount:${postgresOperator.namespace}:${postgresOperator.name}`;
const WRITES = `${postgresOperator.name}-owned-writes.kanri.dev`;
const OWNERS = `${postgresOperator.name}-owner-exists.kanri.dev`;
const MEMBERS = 'member-labels.postgres.kanri.dev';
/** Any object, its fields unchecked: the tests write what the API server must refuse. */
type Loose = KubeObject & Record<string, unknown>;

describe("the operator's identity writes only what it owns; only it labels a cluster's members", () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let operator: KubeClient;
  let alice: KubeClient;
  let uid = '';
  let db: PostgresCluster;
  /** The refusal's message, or 'allowed'. */
  const attempt = (write: () => Promise<unknown>) =>
    write().then(
      () => 'allowed',
      (e: unknown) => (e instanceof ApiError ? `${e.statusCode}: ${e.message}` : `not an API error: ${e}`),
    );
  /** What the operator's builders put on an object of cluster `db`. */
  const owned = (name: string, namespace = TEAM, cluster = 'db', ownerUid = uid) => ({
    name,
    namespace,
    labels: { [LABEL.cluster]: cluster, 'app.kubernetes.io/managed-by': 'kanri' },
    ownerReferences: [
      { apiVersion: API_VERSION, kind: KIND, name: cluster, uid: ownerUid, controller: true, blockOwnerDeletion: true },
    ],
  });
  const as = (client: KubeClient, apiVersion: string, kind: string) => client.resource<Loose>(apiVersion, kind);
  const pod = (metadata: Record<string, unknown>, spec: Record<string, unknown> = {}) => ({
    metadata,
    spec: {
      serviceAccountName: names.instanceServiceAccount('db'),
      containers: [{ name: 'c', image: 'x/y:1' }],
      ...spec,
    },
  });

  before(async () => {
    cp = await startControlPlane();
    admin = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    const apply = (o: Record<string, unknown>) =>
      admin.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test', force: true });
    for (const r of [PostgresClusterResource, PostgresBackupResource, PGUpgradeResource])
      await apply(r.crd as unknown as Record<string, unknown>);
    for (const ns of [postgresOperator.namespace, TEAM, EMPTY])
      await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await waitFor('the PostgresCluster CRD to be served', () =>
      admin.resource(API_VERSION, KIND).list({ namespace: TEAM }),
    );
    for (const object of [...postgresOperator.rbac(), ...postgresOperator.policies()]) await apply(object);
    // No controllers run here: the ServiceAccounts a Pod names must be made by hand.
    for (const name of ['default', names.instanceServiceAccount('db')])
      await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: TEAM } });
    const cluster = await admin.resource<Loose>(API_VERSION, KIND).create({
      metadata: { name: 'db', namespace: TEAM },
      spec: {
        postgresVersion: 15,
        instances: [
          {
            name: 'i',
            replicas: 1,
            dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    });
    uid = cluster.metadata?.uid ?? '';
    db = cluster as unknown as PostgresCluster;
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: names.instanceServiceAccount('db'), namespace: TEAM },
      rules: buildInstanceRoleRules('db', []),
    });
    await apply({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'kube-controller-manager', namespace: 'kube-system' },
      spec: { holderIdentity: 'control-plane' },
    });
    // A namespace user who may create and label Pods in the cluster's namespace.
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pods', namespace: TEAM },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'patch', 'delete'] }],
    });
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'alice-pods', namespace: TEAM },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pods' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    });
    const identity = await cp.addUser({
      name: OPERATOR_USER,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${postgresOperator.namespace}`],
    });
    operator = await KubeClient.load({ kubeconfig: identity.kubeconfigPath, maxAttempts: 1 });
    alice = await KubeClient.load({ kubeconfig: (await cp.addUser({ name: 'alice' })).kubeconfigPath, maxAttempts: 1 });
    // Each policy takes effect once the API server has compiled it with its binding (and found its
    // params); dry runs go through admission without writing.
    const probes: Record<string, () => Promise<unknown>> = {
      [WRITES]: () =>
        as(operator, 'v1', 'ConfigMap').create({ metadata: { name: 'probe', namespace: TEAM } }, { dryRun: true }),
      [OWNERS]: () => as(operator, 'v1', 'ConfigMap').create({ metadata: owned('db-probe', EMPTY) }, { dryRun: true }),
      [MEMBERS]: () =>
        as(alice, 'v1', 'Pod').create(pod({ name: 'probe', namespace: TEAM, labels: { [LABEL.cluster]: 'db' } }), {
          dryRun: true,
        }),
    };
    for (const [policy, probe] of Object.entries(probes))
      await waitFor(
        `${policy} to be in force`,
        async () => {
          const outcome = await attempt(probe);
          if (!outcome.includes(policy)) throw new Error(outcome);
          return outcome;
        },
        30_000,
        250,
      );
  });
  after(async () => {
    await alice?.close();
    await operator?.close();
    await admin?.close();
    await cp?.stop();
  });

  it('may write what it writes for a cluster: its Secrets, ServiceAccount, binding, Pods, the leader Lease, and its own Lease', async () => {
    assert.equal(
      await attempt(() =>
        as(operator, 'v1', 'Secret').create({ metadata: owned('db-superuser'), stringData: { a: 'b' } }),
      ),
      'allowed',
    );
    assert.equal(
      await attempt(() =>
        as(operator, 'v1', 'Secret').patch(
          'db-superuser',
          { stringData: { a: 'c' } },
          { namespace: TEAM, type: 'merge' },
        ),
      ),
      'allowed',
    );
    assert.equal(
      await attempt(() => as(operator, 'v1', 'ServiceAccount').create({ metadata: owned('db-other') })),
      'allowed',
    );
    assert.equal(
      await attempt(() =>
        as(operator, 'rbac.authorization.k8s.io/v1', 'Role').create({
          metadata: owned('db-other'),
          rules: buildInstanceRoleRules('db', ['app']),
        }),
      ),
      'allowed',
    );
    assert.equal(
      await attempt(() =>
        as(operator, 'rbac.authorization.k8s.io/v1', 'RoleBinding').create({
          metadata: owned('db-instance'),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'db-instance' },
          subjects: [{ kind: 'ServiceAccount', name: 'db-instance', namespace: TEAM }],
        }),
      ),
      'allowed',
    );
    assert.equal(await attempt(() => as(operator, 'v1', 'Pod').create(pod(owned('db-i-0')))), 'allowed');
    // The repo host's own ServiceAccount, Role and binding, then its Pod running as that account
    // (issue 37, finding 3), as the operator's builders make them.
    const ownedAs = (object: Record<string, unknown>) => {
      const metadata = object.metadata as { name: string; labels?: Record<string, string> };
      const mine = owned(metadata.name);
      return { ...object, metadata: { ...metadata, ...mine, labels: { ...metadata.labels, ...mine.labels } } } as Loose;
    };
    for (const object of repoHostRbac(db))
      assert.equal(
        await attempt(() => as(operator, String(object.apiVersion), String(object.kind)).create(ownedAs(object))),
        'allowed',
        `${object.kind} ${names.repoHostServiceAccount('db')}`,
      );
    const repoHost = repoHostPod(db) as unknown as Record<string, unknown>;
    assert.equal(
      (repoHost.spec as { serviceAccountName?: string }).serviceAccountName,
      names.repoHostServiceAccount('db'),
    );
    assert.equal(await attempt(() => as(operator, 'v1', 'Pod').create(ownedAs(repoHost))), 'allowed', 'the repo host');
    // Drift: someone relabelled the cluster's Secret; its controller reference still names db.
    await admin
      .resource('v1', 'Secret')
      .patch(
        'db-superuser',
        { metadata: { labels: { [LABEL.cluster]: 'someone-else' } } },
        { namespace: TEAM, type: 'merge' },
      );
    assert.equal(
      await attempt(() =>
        as(operator, 'v1', 'Secret').patch(
          'db-superuser',
          { metadata: { labels: { [LABEL.cluster]: 'db' } } },
          { namespace: TEAM, type: 'merge' },
        ),
      ),
      'allowed',
    );
    await admin
      .resource('coordination.k8s.io/v1', 'Lease')
      .create({ metadata: { name: 'db-leader', namespace: TEAM, labels: { [LABEL.cluster]: 'db' } } });
    assert.equal(
      await attempt(() => as(operator, 'coordination.k8s.io/v1', 'Lease').delete('db-leader', { namespace: TEAM })),
      'allowed',
    );
    assert.equal(
      await attempt(() =>
        as(operator, 'coordination.k8s.io/v1', 'Lease').create({
          metadata: { name: `${postgresOperator.name}-leader`, namespace: postgresOperator.namespace },
        }),
      ),
      'allowed',
    );
  });

  it("is refused kube-system's Leases, though RBAC grants it every Lease", async () => {
    const leases = as(operator, 'coordination.k8s.io/v1', 'Lease');
    const lease = await admin
      .resource<Loose & { spec?: { holderIdentity?: string } }>('coordination.k8s.io/v1', 'Lease')
      .get('kube-controller-manager', { namespace: 'kube-system' });
    const taken = await attempt(() => leases.update({ ...lease, spec: { holderIdentity: 'evil' } }));
    const refusal = new RegExp(`^403: .*${WRITES}.*only objects labelled ${LABEL.cluster}`);
    assert.match(taken, refusal);
    assert.match(await attempt(() => leases.delete('kube-controller-manager', { namespace: 'kube-system' })), refusal);
    assert.match(
      await attempt(() => leases.create({ metadata: { name: 'kube-scheduler', namespace: 'kube-system' } })),
      refusal,
    );
    const kept = await admin
      .resource<Loose & { spec?: { holderIdentity?: string } }>('coordination.k8s.io/v1', 'Lease')
      .get('kube-controller-manager', { namespace: 'kube-system' });
    assert.equal(kept.spec?.holderIdentity, 'control-plane');
  });

  it('is refused Secrets and ServiceAccounts it does not own, and any in a namespace without a cluster', async () => {
    const secrets = as(operator, 'v1', 'Secret');
    const accounts = as(operator, 'v1', 'ServiceAccount');
    assert.match(
      await attempt(() => secrets.create({ metadata: { name: 'app-credentials', namespace: TEAM } })),
      new RegExp(`^403: .*${WRITES}.*only objects labelled`),
    );
    assert.match(
      await attempt(() => accounts.create({ metadata: { name: 'ci-deployer', namespace: TEAM } })),
      new RegExp(`^403: .*${WRITES}`),
    );
    // Labelled for a cluster, but not named after it; named after it, but owned by no such cluster.
    assert.match(
      await attempt(() => secrets.create({ metadata: owned('app-token') })),
      /^403: .*named after their PostgresCluster/,
    );
    assert.match(
      await attempt(() =>
        secrets.create({ metadata: owned('db-forged', TEAM, 'db', '00000000-0000-0000-0000-000000000000') }),
      ),
      new RegExp(`^403: .*${OWNERS}.*only for the PostgresCluster db that exists`),
    );
    // No PostgresCluster in the namespace: the API server finds no params and refuses (422, its words).
    const noCluster = new RegExp(`^422: .*${OWNERS}.*no params found`);
    assert.match(await attempt(() => secrets.create({ metadata: owned('db-x', EMPTY) })), noCluster);
    assert.match(await attempt(() => accounts.create({ metadata: owned('db-x', EMPTY) })), noCluster);
    assert.match(await attempt(() => secrets.create({ metadata: owned('db-y', 'kube-system') })), noCluster);
    // A Secret of the user's the operator did not make is not its to change.
    await admin
      .resource('v1', 'Secret')
      .create({ metadata: { name: 'app-credentials', namespace: TEAM, labels: { [LABEL.cluster]: 'other' } } });
    assert.match(
      await attempt(() =>
        secrets.patch(
          'app-credentials',
          { metadata: { labels: { [LABEL.cluster]: 'db' } } },
          { namespace: TEAM, type: 'merge' },
        ),
      ),
      /^403: /,
    );
  });

  it("is refused what would hand it another identity: token Secrets, other ServiceAccounts' Pods, the node, foreign bindings", async () => {
    assert.match(
      await attempt(() =>
        as(operator, 'v1', 'Secret').create({
          metadata: { ...owned('db-token'), annotations: { 'kubernetes.io/service-account.name': 'default' } },
          type: 'kubernetes.io/service-account-token',
        }),
      ),
      /^403: .*ServiceAccount token Secrets/,
    );
    assert.match(
      await attempt(() => as(operator, 'v1', 'Pod').create(pod(owned('db-i-1'), { serviceAccountName: 'default' }))),
      /^403: .*only as its own ServiceAccount/,
    );
    assert.match(
      await attempt(() =>
        as(operator, 'v1', 'Pod').create(
          pod(owned('db-i-2'), { volumes: [{ name: 'root', hostPath: { path: '/' } }] }),
        ),
      ),
      /^403: .*mount none of its paths/,
    );
    assert.match(
      await attempt(() =>
        as(operator, 'rbac.authorization.k8s.io/v1', 'RoleBinding').create({
          metadata: owned('db-alice'),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'db-instance' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
        }),
      ),
      /^403: .*binds only its own Roles to its own ServiceAccounts/,
    );
  });

  it("refuses a namespace user's Pod that carries the cluster's labels, and relabelling the cluster's Pods", async () => {
    const pods = as(alice, 'v1', 'Pod');
    const joined = await attempt(() =>
      pods.create(
        pod(
          { name: 'intruder', namespace: TEAM, labels: { [LABEL.cluster]: 'db' } },
          { serviceAccountName: 'default' },
        ),
      ),
    );
    assert.match(joined, new RegExp(`^403: .*${MEMBERS}.*only the PostgreSQL operator creates pods labelled`));
    assert.equal(
      await attempt(() =>
        pods.create(pod({ name: 'app', namespace: TEAM, labels: { app: 'web' } }, { serviceAccountName: 'default' })),
      ),
      'allowed',
    );
    assert.match(
      await attempt(() =>
        pods.patch('app', { metadata: { labels: { [LABEL.cluster]: 'db' } } }, { namespace: TEAM, type: 'merge' }),
      ),
      new RegExp(`^403: .*${MEMBERS}`),
    );
    assert.match(
      await attempt(() =>
        pods.patch('db-i-0', { metadata: { labels: { [LABEL.role]: 'primary' } } }, { namespace: TEAM, type: 'merge' }),
      ),
      new RegExp(`^403: .*${MEMBERS}`),
    );
    // Other labels of the cluster's Pods stay the namespace's to set.
    assert.equal(
      await attempt(() =>
        pods.patch('db-i-0', { metadata: { labels: { team: 'payments' } } }, { namespace: TEAM, type: 'merge' }),
      ),
      'allowed',
    );
  });
});
