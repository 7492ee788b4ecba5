import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { imageBuilds, imageTags, patroniVersion } from './images.mjs';
import { clusterObjects, clusterState, DATA_DIR, patroniConfiguration, randomPassword } from './manifests.mjs';

const spec = { name: 'pg', namespace: 'bench', instances: 3, synchronous: false, storage: '1Gi' };
const objects = (overrides = {}) =>
  clusterObjects({
    spec: { ...spec, ...overrides },
    image: 'localhost/kanri-bench/patroni:4.1.5-pg16',
    version: '4.1.5',
    passwords: { superuser: 's', replication: 'r' },
    nodes: ['real-node-1', 'real-node-2', 'real-node-3'],
  });
const byKind = (list, kind, name) => list.find((o) => o.kind === kind && (!name || o.metadata.name === name));

describe('patroniConfiguration', () => {
  it('keeps bench:failover’s DCS settings, as Patroni 4 accepts them, with failsafe_mode on', () => {
    const { dcs } = patroniConfiguration({ name: 'pg', namespace: 'bench', sync: false, version: '4.1.5' }).bootstrap;
    assert.deepEqual([dcs.ttl, dcs.loop_wait, dcs.retry_timeout], [20, 2, 9]);
    assert.equal(dcs.failsafe_mode, true);
    assert.equal(dcs.synchronous_mode, false);
    assert.equal(dcs.postgresql.use_pg_rewind, true);
  });

  it('is strict synchronous with one standby when asked, as Kanri’s FIRST 1', () => {
    const { dcs } = patroniConfiguration({ name: 'pg', namespace: 'bench', sync: true, version: '4.1.5' }).bootstrap;
    assert.equal(dcs.synchronous_mode, true);
    assert.equal(dcs.synchronous_mode_strict, true);
    assert.equal(dcs.synchronous_node_count, 1);
  });

  it('uses the Kubernetes DCS with the leader in Endpoints, and no etcd', () => {
    const config = patroniConfiguration({ name: 'pg', namespace: 'bench', sync: false, version: '4.1.5' });
    assert.equal(config.etcd3, undefined);
    assert.equal(config.namespace, undefined, 'no etcd key prefix');
    assert.equal(config.scope, 'pg');
    assert.equal(config.kubernetes.namespace, 'bench');
    assert.equal(config.kubernetes.use_endpoints, true);
    assert.equal(config.kubernetes.leader_label_value, 'primary');
    assert.deepEqual(config.kubernetes.ports, [{ name: 'postgresql', port: 5432 }]);
    assert.equal(config.watchdog.mode, 'off');
  });

  it('leaves per-Pod values and passwords to the kubelet’s $(…) expansion', () => {
    const config = patroniConfiguration({ name: 'pg', namespace: 'bench', sync: false, version: '4.1.5' });
    assert.equal(config.name, '$(PATRONI_NAME)');
    assert.equal(config.postgresql.connect_address, '$(PATRONI_KUBERNETES_POD_IP):5432');
    assert.equal(config.restapi.connect_address, '$(PATRONI_KUBERNETES_POD_IP):8008');
    assert.equal(config.postgresql.authentication.superuser.password, '$(PATRONI_SUPERUSER_PASSWORD)');
    assert.equal(config.postgresql.data_dir, DATA_DIR);
    assert.equal(config.postgresql.parameters.ssl, undefined, 'no certificate files in the image');
    assert.ok(config.postgresql.pg_hba.includes('host all all 0.0.0.0/0 scram-sha-256'));
  });
});

describe('clusterObjects', () => {
  it('creates RBAC, the Secret and the Services before the StatefulSet', () => {
    assert.deepEqual(
      objects().map((o) => `${o.kind}/${o.metadata.name}`),
      [
        'ServiceAccount/pg',
        'Role/pg',
        'RoleBinding/pg',
        'Secret/pg',
        'Service/pg',
        'Service/pg-config',
        'StatefulSet/pg',
      ],
    );
    for (const o of objects()) assert.equal(o.metadata.namespace, 'bench');
  });

  it('gives the read-write Service no selector and the port name Patroni writes into its Endpoints', () => {
    const service = byKind(objects(), 'Service', 'pg');
    assert.equal(service.spec.selector, undefined);
    assert.deepEqual(service.spec.ports, [{ name: 'postgresql', port: 5432, targetPort: 5432 }]);
    assert.equal(byKind(objects(), 'Service', 'pg-config').spec.clusterIP, 'None');
  });

  it('lets Patroni manage its Endpoints and ConfigMaps, label its Pods and create the -config Service', () => {
    const rules = byKind(objects(), 'Role').rules;
    const verbs = (resource) => rules.find((r) => r.resources.includes(resource)).verbs;
    for (const v of ['get', 'list', 'watch', 'create', 'patch', 'update']) assert.ok(verbs('endpoints').includes(v));
    for (const v of ['get', 'list', 'watch', 'patch']) assert.ok(verbs('pods').includes(v));
    assert.deepEqual(verbs('services'), ['create']);
  });

  it('spreads instances over the instance nodes, one per node, and rolls them one at a time', () => {
    const set = byKind(objects({ instances: 5 }), 'StatefulSet').spec;
    assert.equal(set.replicas, 5);
    assert.equal(set.podManagementPolicy, 'Parallel');
    assert.deepEqual(set.updateStrategy, { type: 'RollingUpdate' });
    const { affinity } = set.template.spec;
    assert.deepEqual(
      affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]
        .values,
      ['real-node-1', 'real-node-2', 'real-node-3'],
    );
    const [anti] = affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
    assert.equal(anti.topologyKey, 'kubernetes.io/hostname');
    assert.deepEqual(anti.labelSelector.matchLabels, { application: 'patroni', 'cluster-name': 'pg' });
    assert.equal(set.volumeClaimTemplates[0].spec.resources.requests.storage, '1Gi');
  });

  it('runs the image as uid 26 with the configuration in its environment and a probe on /readiness', () => {
    const pod = byKind(objects(), 'StatefulSet').spec.template.spec;
    assert.equal(pod.securityContext.runAsUser, 26);
    assert.equal(pod.securityContext.fsGroup, 26);
    assert.equal(pod.terminationGracePeriodSeconds, 30, 'the same grace as the other systems');
    const [container] = pod.containers;
    assert.equal(container.imagePullPolicy, 'IfNotPresent');
    assert.equal(container.readinessProbe.httpGet.path, '/readiness');
    const names = container.env.map((e) => e.name);
    // The kubelet expands $(NAME) only for variables defined earlier in the list.
    const configAt = names.indexOf('PATRONI_CONFIGURATION');
    for (const ref of ['PATRONI_NAME', 'PATRONI_KUBERNETES_POD_IP', 'PATRONI_SUPERUSER_PASSWORD'])
      assert.ok(names.indexOf(ref) >= 0 && names.indexOf(ref) < configAt, ref);
    const config = JSON.parse(container.env[configAt].value);
    assert.equal(config.bootstrap.dcs.synchronous_mode, false);
    assert.equal(
      JSON.parse(
        byKind(objects({ synchronous: true }), 'StatefulSet').spec.template.spec.containers[0].env[configAt].value,
      ).bootstrap.dcs.synchronous_mode,
      true,
    );
  });
});

describe('clusterState', () => {
  it('is ready with one running leader and every other member streaming', () => {
    const members = [
      { name: 'pg-0', role: 'leader', state: 'running' },
      { name: 'pg-1', role: 'replica', state: 'streaming' },
      { name: 'pg-2', role: 'sync_standby', state: 'streaming' },
    ];
    assert.deepEqual(clusterState({ members }, 3), {
      leader: 'pg-0',
      ready: true,
      members: ['pg-0 leader running', 'pg-1 replica streaming', 'pg-2 sync_standby streaming'],
    });
    assert.equal(clusterState({ members: members.slice(0, 2) }, 3).ready, false);
    assert.equal(
      clusterState({ members: [members[0], members[1], { ...members[2], state: 'starting' }] }, 3).ready,
      false,
    );
    assert.deepEqual(clusterState({ members: members.slice(1) }, 2), {
      leader: undefined,
      ready: false,
      members: ['pg-1 replica streaming', 'pg-2 sync_standby streaming'],
    });
  });
});

describe('images', () => {
  it('builds two tags of one Dockerfile that differ only in IMAGE_VARIANT', () => {
    const wheel = { version: '16.15.0', sha256: 'abc' };
    const [a, b] = imageBuilds({ version: '4.1.5', major: '16', wheel });
    assert.deepEqual(imageTags('4.1.5', '16'), { primary: a.tag, alternate: b.tag });
    assert.equal(a.tag, 'localhost/kanri-bench/patroni:4.1.5-pg16');
    assert.equal(a.dockerfile, b.dockerfile);
    assert.deepEqual({ ...a.buildArgs, IMAGE_VARIANT: 'b' }, b.buildArgs);
    assert.equal(a.buildArgs.PG_WHEEL_SHA256, 'abc');
  });

  it('reads the Patroni version from the pin file', () => {
    assert.equal(patroniVersion('patroni[etcd3]==4.1.5\n'), '4.1.5');
    assert.throws(() => patroniVersion('psycopg==3\n'), /pins no patroni/);
  });

  it('makes hex passwords', () => {
    assert.match(randomPassword(), /^[0-9a-f]{32}$/);
  });
});
