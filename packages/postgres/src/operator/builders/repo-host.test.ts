import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, rulesToGrantInstanceRoles, rulesToGrantRepoHostRoles } from '../../contract/index.js';
import { disruptionBudget } from './disruption-budget.js';
import { instancePod } from './instance-pod.js';
import { instanceRbac } from './instance-rbac.js';
import { REPO_HOST_SPEC_ANNOTATION, repoHostPod, repoHostRbac, repoVolumeClaims } from './repo-host.js';

const claimSpec = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
const credentials = { secret: { name: 'hippo-s3-creds' } };
const cluster = (overrides: Record<string, unknown> = {}): PostgresCluster =>
  ({
    metadata: { name: 'hippo', namespace: 'db', uid: 'u1' },
    spec: {
      postgresVersion: 16,
      instances: [{ name: 'instance1', replicas: 2, dataVolumeClaimSpec: claimSpec }],
      backups: {
        pgbackrest: {
          configuration: [credentials],
          repos: [
            { name: 'repo1', volume: { volumeClaimSpec: claimSpec } },
            { name: 'repo2', s3: { bucket: 'b', endpoint: 'e', region: 'r' } },
            { name: 'repo3', volume: { volumeClaimSpec: { ...claimSpec, storageClassName: 'slow' } } },
          ],
        },
      },
      ...overrides,
    },
  }) as unknown as PostgresCluster;

describe('repoVolumeClaims', () => {
  it('one PVC per volume repo, named <cluster>-<repo>, with the repo’s claim spec and the repo host labels', () => {
    const claims = repoVolumeClaims(cluster());
    assert.deepEqual(
      claims.map((c) => [c.metadata?.name, c.metadata?.namespace, c.spec?.storageClassName]),
      [
        ['hippo-repo1', 'db', undefined],
        ['hippo-repo3', 'db', 'slow'],
      ],
    );
    assert.deepEqual(claims[0]?.spec?.resources, claimSpec.resources);
    for (const claim of claims) {
      assert.equal(claim.metadata?.labels?.[LABEL.cluster], 'hippo');
      assert.equal(claim.metadata?.labels?.['postgres.kanri.dev/repo-host'], 'true');
      assert.equal(claim.metadata?.labels?.[LABEL.instance], undefined, 'not counted as an instance');
    }
  });

  it('none without a volume repo', () => {
    assert.deepEqual(
      repoVolumeClaims(cluster({ backups: { pgbackrest: { repos: [{ name: 'repo1', s3: {} }] } } })),
      [],
    );
    assert.deepEqual(repoVolumeClaims(cluster({ backups: undefined })), []);
  });
});

describe('repoHostPod', () => {
  const pod = repoHostPod(cluster());
  const container = pod.spec?.containers[0];

  it('is named <cluster>-repo-host, labelled as the repo host and as no instance', () => {
    assert.equal(pod.metadata?.name, 'hippo-repo-host');
    assert.equal(pod.spec?.hostname, 'hippo-repo-host');
    assert.equal(pod.metadata?.namespace, 'db');
    assert.equal(pod.metadata?.labels?.[LABEL.cluster], 'hippo');
    assert.equal(pod.metadata?.labels?.['postgres.kanri.dev/repo-host'], 'true');
    assert.equal(pod.metadata?.labels?.[LABEL.instance], undefined);
    assert.equal(pod.metadata?.labels?.[LABEL.instanceSet], undefined);
  });

  it('runs the instance image as repo host, under its own ServiceAccount and the instance security context', () => {
    const instance = instancePod({
      cluster: cluster(),
      name: 'hippo-instance1-0',
      set: 'instance1',
      setIndex: 0,
      bootstrap: 'initdb',
    });
    assert.equal(container?.image, 'ghcr.io/kanri-dev/postgres:16');
    assert.equal(repoHostPod(cluster({ image: 'example/pg:1' })).spec?.containers[0]?.image, 'example/pg:1');
    assert.deepEqual(container?.args, ['repo-host']);
    assert.equal(pod.spec?.serviceAccountName, 'hippo-repo-host');
    assert.notEqual(pod.spec?.serviceAccountName, instance.spec?.serviceAccountName, 'never the instances’ account');
    assert.deepEqual(pod.spec?.securityContext, instance.spec?.securityContext);
    assert.deepEqual(container?.securityContext, instance.spec?.containers[0]?.securityContext);
    assert.deepEqual(
      container?.ports?.map((p) => p.containerPort),
      [8000, 8432, 8433],
    );
    assert.deepEqual(container?.readinessProbe?.httpGet, { path: '/readyz', port: 8000 });
    assert.deepEqual(container?.livenessProbe?.httpGet, { path: '/healthz', port: 8000 });
  });

  it('gets its identity from the downward API and no password', () => {
    const env = container?.env ?? [];
    assert.deepEqual(
      env.map((e) => [e.name, e.value ?? e.valueFrom?.fieldRef?.fieldPath]),
      [
        ['PGC_CLUSTER', 'hippo'],
        ['POD_NAME', 'metadata.name'],
        ['POD_NAMESPACE', 'metadata.namespace'],
        ['POD_IP', 'status.podIP'],
      ],
    );
    assert.ok(env.every((e) => e.valueFrom?.secretKeyRef === undefined));
  });

  it('mounts each volume repo at /pgbackrest/<repo>, run, tmp and the configuration', () => {
    const mounts = Object.fromEntries((container?.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
    assert.deepEqual(Object.keys(mounts).sort(), [
      '/etc/pgbackrest/conf.d',
      '/pgbackrest/repo1',
      '/pgbackrest/repo3',
      '/run/postgresql',
      '/tmp',
    ]);
    assert.equal(volumes.get(mounts['/pgbackrest/repo1'] ?? '')?.persistentVolumeClaim?.claimName, 'hippo-repo1');
    assert.equal(volumes.get(mounts['/pgbackrest/repo3'] ?? '')?.persistentVolumeClaim?.claimName, 'hippo-repo3');
    assert.deepEqual(volumes.get(mounts['/run/postgresql'] ?? '')?.emptyDir, {});
    assert.deepEqual(volumes.get(mounts['/tmp'] ?? '')?.emptyDir, {});
    assert.deepEqual(volumes.get(mounts['/etc/pgbackrest/conf.d'] ?? '')?.projected?.sources, [credentials]);
    assert.ok(!JSON.stringify(pod).includes('pgbackrest-ca'), 'the CA is never mounted');
  });

  it('mounts no configuration when the spec has none', () => {
    const bare = cluster({
      backups: { pgbackrest: { repos: [{ name: 'repo1', volume: { volumeClaimSpec: claimSpec } }] } },
    });
    const mounts = repoHostPod(bare).spec?.containers[0]?.volumeMounts?.map((m) => m.mountPath);
    assert.deepEqual(mounts, ['/pgbackrest/repo1', '/run/postgresql', '/tmp']);
  });
});

describe('repoHostRbac (issue 37, finding 3)', () => {
  type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };
  const objects = repoHostRbac(cluster({ users: [{ name: 'app' }] }));
  const role = objects.find((o) => o.kind === 'Role') as { rules: Rule[]; metadata: { name: string } };
  const allows = (rules: readonly Rule[], group: string, resource: string, verb: string, name?: string) =>
    rules.some(
      (r) =>
        r.apiGroups.includes(group) &&
        r.resources.includes(resource) &&
        r.verbs.includes(verb) &&
        (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name))),
    );

  it('binds a Role of its own to the account the Pod runs as', () => {
    const account = objects.find((o) => o.kind === 'ServiceAccount') as { metadata: { name: string } };
    const binding = objects.find((o) => o.kind === 'RoleBinding') as {
      roleRef: { name: string };
      subjects: { name: string; namespace: string }[];
    };
    assert.equal(account.metadata.name, repoHostPod(cluster()).spec?.serviceAccountName);
    assert.equal(binding.roleRef.name, role.metadata.name);
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: account.metadata.name, namespace: 'db' }]);
    const instanceAccount = instanceRbac(cluster()).find((o) => o.kind === 'ServiceAccount') as {
      metadata: { name: string };
    };
    assert.notEqual(account.metadata.name, instanceAccount.metadata.name);
  });

  it('reads no Secret (not PostgreSQL’s keys, not the users’ passwords) and writes only its own Pod', () => {
    assert.ok(!role.rules.some((r) => r.resources.includes('secrets')), JSON.stringify(role.rules));
    for (const name of ['hippo-postgres-tls', 'hippo-pguser-app', 'hippo-superuser', 'hippo-pgbackrest-tls'])
      for (const verb of ['get', 'list', 'watch']) assert.ok(!allows(role.rules, '', 'secrets', verb, name), name);
    assert.ok(allows(role.rules, '', 'pods', 'patch', 'hippo-repo-host'));
    assert.ok(!allows(role.rules, '', 'pods', 'patch', 'hippo-instance1-0'), 'no other Pod');
    for (const verb of ['create', 'update', 'delete'])
      assert.ok(!allows(role.rules, 'coordination.k8s.io', 'leases', verb, 'hippo-leader'), `no Lease ${verb}`);
    assert.ok(allows(role.rules, 'postgres.kanri.dev', 'postgresbackups/status', 'patch'), 'records its backups');
  });

  it('grants nothing the operator does not hold', () => {
    const held = [...rulesToGrantInstanceRoles(), ...rulesToGrantRepoHostRoles()] as Rule[];
    for (const rule of role.rules)
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) assert.ok(allows(held, group, resource, verb), `${verb} ${group}/${resource}`);
  });
});

describe('the repo host’s spec digest', () => {
  const digest = (c: PostgresCluster) => repoHostPod(c).metadata?.annotations?.[REPO_HOST_SPEC_ANNOTATION];
  const pgbackrest = (extra: Record<string, unknown>) => ({
    backups: { pgbackrest: { ...cluster().spec.backups?.pgbackrest, ...extra } },
  });

  it('stays while what the Pod is built from stays', () => {
    assert.match(digest(cluster()) ?? '', /^[0-9a-f]{16}$/);
    assert.equal(digest(cluster()), digest(cluster()));
    const scaled = cluster({ instances: [{ name: 'instance1', replicas: 5, dataVolumeClaimSpec: claimSpec }] });
    assert.equal(digest(scaled), digest(cluster()), 'instances are not the repo host’s business');
    const scheduled = cluster().spec.backups?.pgbackrest?.repos.map((r) => ({ ...r, schedules: { full: '@daily' } }));
    assert.equal(digest(cluster(pgbackrest({ repos: scheduled }))), digest(cluster()));
  });

  it('changes with the volume repos, the configuration and the image', () => {
    const repos = cluster().spec.backups?.pgbackrest?.repos ?? [];
    const changes = {
      'a volume repo added': pgbackrest({
        repos: [...repos, { name: 'repo4', volume: { volumeClaimSpec: claimSpec } }],
      }),
      'a volume repo removed': pgbackrest({ repos: repos.filter((r) => r.name !== 'repo3') }),
      configuration: pgbackrest({ configuration: [credentials, { secret: { name: 'more' } }] }),
      image: { image: 'example/pg:2' },
    };
    for (const [what, overrides] of Object.entries(changes)) {
      assert.notEqual(digest(cluster(overrides)), digest(cluster()), what);
    }
  });
});

describe('disruptionBudget', () => {
  it('counts the instances only, not the repo host', () => {
    const budget = disruptionBudget(cluster());
    assert.equal(budget.spec?.minAvailable, 1);
    const selector = budget.spec?.selector;
    const selects = (labels: Record<string, string | undefined>) =>
      Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
      (selector?.matchExpressions ?? []).every((e) => e.operator === 'Exists' && labels[e.key] !== undefined);
    assert.ok(
      selects(
        instancePod({
          cluster: cluster(),
          name: 'hippo-instance1-0',
          set: 'instance1',
          setIndex: 0,
          bootstrap: 'initdb',
        }).metadata?.labels ?? {},
      ),
    );
    assert.ok(!selects(repoHostPod(cluster()).metadata?.labels ?? {}));
  });
});
