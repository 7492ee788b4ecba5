/**
 * Issue 41: PGO fields that Kanri implements, on a running cluster.
 * - Image pull and placement: a cluster with `imagePullPolicy`, `imagePullSecrets`, and an
 *   instance set with `priorityClassName` and `topologySpreadConstraints` becomes Ready, and its
 *   Pods carry each: the API server's Priority admission resolved the class to its value (so the
 *   name reached it as a Pod field), and the scheduler placed the instances on different nodes
 *   under a constraint that allows no skew.
 * - Users: `users[].password.type` shapes the generated password (which logs in), and each user
 *   Secret has PGO's `jdbc-uri`.
 * - Services: `service` shapes `-primary` and `replicaService` `-replicas`, as the API server
 *   stores them (the node port allocated as asked); a node port on a ClusterIP is refused. That
 *   cluster declares no users: PGO's default user, named after it, logs in to its own database.
 * - Switchover: with `patroni.switchover.enabled`, each new value of PGO's trigger-switchover
 *   annotation moves the primary once, and `status.patroni.switchover` shows it; PGO's Failover
 *   type is refused, saying why.
 * - databaseInitSQL: a script that fails is reported (status and a Warning Event, psql's error
 *   named) and not recorded; once its text changes it runs, `\c` and all, after spec.users'
 *   database exists, and is recorded; removed, its status goes, and set again with another key it
 *   runs again; a failover does not run it again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { serviceAddress, waitFor } from '@kanri/testenv';
import type { ConfigMap, Pod, Service } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, LABEL, names } from '../src/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  secretValue,
  startPostgresEnv,
  waitReady,
} from './harness.js';

describe('PGO fields on a running cluster', { timeout: 8 * 60_000 }, () => {
  let env: PostgresEnv;
  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
  });
  after(async () => {
    await env?.stop();
  });

  it('reach the instance Pods, which the API server and the scheduler honour', async () => {
    await env.client.resource<KubeObject & { value: number }>('scheduling.k8s.io/v1', 'PriorityClass').create({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'kanri-databases' },
      value: 100_000,
    });
    const spread = {
      maxSkew: 1,
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { [LABEL.cluster]: 'placed' } },
    };
    const manifest = clusterManifest('placed', 2);
    await clusters(env.client).create({
      ...manifest,
      spec: {
        ...manifest.spec,
        imagePullPolicy: 'IfNotPresent',
        imagePullSecrets: [{ name: 'registry' }],
        instances: [
          {
            ...manifest.spec.instances[0],
            priorityClassName: 'kanri-databases',
            topologySpreadConstraints: [spread],
          },
        ],
      },
    } as typeof manifest);
    await waitReady(env.client, 'placed', 2);
    const pods = (
      await env.client.resource<Pod>('v1', 'Pod').list({
        namespace: 'default',
        labelSelector: `${LABEL.cluster}=placed,${LABEL.instance}`,
      })
    ).items;
    assert.equal(pods.length, 2);
    for (const pod of pods) {
      const name = pod.metadata?.name;
      assert.equal(pod.spec?.priorityClassName, 'kanri-databases', name);
      assert.equal(pod.spec?.priority, 100_000, `${name}: the Priority admission plugin resolved the class`);
      assert.deepEqual(pod.spec?.imagePullSecrets, [{ name: 'registry' }], name);
      assert.equal(pod.spec?.containers?.[0]?.imagePullPolicy, 'IfNotPresent', name);
      assert.deepEqual(pod.spec?.topologySpreadConstraints, [spread], name);
    }
    assert.equal(new Set(pods.map((p) => p.spec?.nodeName)).size, 2, 'one instance per node');
  });

  it("generate each user's password of its password.type, put PGO's jdbc-uri in its Secret, and log in", async () => {
    const manifest = clusterManifest('typed', 1);
    await clusters(env.client).create({
      ...manifest,
      spec: {
        ...manifest.spec,
        users: [
          { name: 'alnum', databases: ['alnum'], password: { type: 'AlphaNumeric' } },
          { name: 'ascii', databases: ['ascii'], password: { type: 'ASCII' } },
          { name: 'plain', databases: ['plain'] },
        ],
      },
    } as typeof manifest);
    await waitReady(env.client, 'typed', 1);
    const secret = (user: string, key: string) => secretValue(env.client, names.userSecret('typed', user), key);
    const alnum = await secret('alnum', 'password');
    assert.match(alnum, /^[A-Za-z0-9]{24}$/);
    assert.match(await secret('ascii', 'password'), /^[A-Za-z0-9()*+,\-./:;<=>?@[\]^_{|}]{24}$/);
    assert.match(await secret('plain', 'password'), /^[A-Za-z0-9_-]{32}$/);
    const jdbc = await secret('ascii', 'jdbc-uri');
    const parsed = new URL(jdbc.slice('jdbc:'.length));
    assert.equal(
      `${parsed.protocol}//${parsed.host}${parsed.pathname}`,
      'postgresql://typed-primary.default.svc:5432/ascii',
    );
    assert.equal(parsed.searchParams.get('user'), 'ascii');
    assert.equal(parsed.searchParams.get('password'), await secret('ascii', 'password'));
    // The password in the Secret is the one postgres checks, punctuation and all.
    const address = await serviceAddress(env.cp, 'default', 'typed-primary', 5432);
    for (const user of ['alnum', 'ascii']) {
      const db = await waitFor(
        `user ${user} to log in`,
        () => secret(user, 'password').then((p) => connect(address, user, p, user)),
        60_000,
        1000,
      );
      try {
        assert.deepEqual((await db.query('select current_user as u')).rows, [{ u: user }]);
      } finally {
        await db.end();
      }
    }
  });

  it('shape the -primary Service by service and the -replicas Service by replicaService', async () => {
    const manifest = clusterManifest('exposed', 1);
    const refused = await clusters(env.client)
      .create(
        { ...manifest, spec: { ...manifest.spec, service: { type: 'ClusterIP', nodePort: 32001 } } } as typeof manifest,
        { dryRun: true },
      )
      .catch((e: Error) => e);
    assert.match(
      String(refused),
      /spec\.service\.nodePort: Invalid value: .*nodePort needs type NodePort or LoadBalancer/,
    );
    await clusters(env.client).create({
      ...manifest,
      spec: {
        ...manifest.spec,
        service: { type: 'NodePort', nodePort: 32001, metadata: { annotations: { 'example.com/owner': 'team-a' } } },
        replicaService: { type: 'ClusterIP', internalTrafficPolicy: 'Local' },
      },
    } as typeof manifest);
    await waitReady(env.client, 'exposed', 1);
    const service = (name: string) =>
      env.client.resource<KubeObject & Service>('v1', 'Service').get(name, { namespace: 'default' });
    const primary = await service(names.primaryService('exposed'));
    assert.equal(primary.spec?.type, 'NodePort');
    assert.equal(primary.spec?.ports?.[0]?.nodePort, 32001);
    assert.equal(primary.metadata?.annotations?.['example.com/owner'], 'team-a');
    const replicas = await service(names.replicasService('exposed'));
    assert.equal(replicas.spec?.type, 'ClusterIP');
    assert.equal(replicas.spec?.internalTrafficPolicy, 'Local');

    // Its spec has no users: PGO's default user, named after the cluster, owns a database of that name.
    const secret = names.userSecret('exposed', 'exposed');
    assert.equal(await secretValue(env.client, secret, 'dbname'), 'exposed');
    const password = await secretValue(env.client, secret, 'password');
    const address = await serviceAddress(env.cp, 'default', 'exposed-primary', 5432);
    const db = await waitFor(
      'the default user to log in to its database',
      () => connect(address, 'exposed', password, 'exposed'),
      60_000,
      1000,
    );
    try {
      assert.deepEqual((await db.query('select current_user as u, current_database() as d')).rows, [
        { u: 'exposed', d: 'exposed' },
      ]);
    } finally {
      await db.end();
    }
  });

  it("switch over once per new value of PGO's trigger annotation", async () => {
    const manifest = clusterManifest('switcher', 2);
    const refused = await clusters(env.client)
      .create(
        {
          ...manifest,
          spec: { ...manifest.spec, patroni: { switchover: { enabled: true, type: 'Failover' } } },
        } as typeof manifest,
        { dryRun: true },
      )
      .catch((e: Error) => e);
    assert.match(String(refused), /spec\.patroni\.switchover\.type: Invalid value: .*only Switchover/);
    await clusters(env.client).create({
      ...manifest,
      spec: { ...manifest.spec, patroni: { switchover: { enabled: true } } },
    } as typeof manifest);
    const before = (await waitReady(env.client, 'switcher', 2)).status?.primary;
    const trigger = (value: string) =>
      clusters(env.client).patch(
        'switcher',
        { metadata: { annotations: { 'postgres-operator.crunchydata.com/trigger-switchover': value } } },
        { namespace: 'default', type: 'merge' },
      );
    await trigger('first');
    const moved = await waitFor(
      'the primary to move and status.patroni.switchover to say first',
      async () => {
        const c = await clusters(env.client).get('switcher', { namespace: 'default' });
        const primary = c.status?.primary;
        return primary && primary !== before && c.status?.patroni?.switchover === 'first' ? primary : undefined;
      },
      120_000,
      500,
    );
    await waitReady(env.client, 'switcher', 2);
    // The same value again is no new request: the primary stays where it went.
    await trigger('first');
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const after = await clusters(env.client).get('switcher', { namespace: 'default' });
    assert.equal(after.status?.primary, moved);
    assert.equal(after.metadata?.annotations?.['postgres.kanri.dev/switchover'], undefined, 'no request stands');
  });

  it('run databaseInitSQL once, after the users, and again only once a failed text changes', async () => {
    const configMaps = env.client.resource<KubeObject & ConfigMap>('v1', 'ConfigMap');
    const sql = (body: string) => ({
      apiVersion: 'v1' as const,
      kind: 'ConfigMap' as const,
      metadata: { name: 'init-sql', namespace: 'default' },
      data: { 'init.sql': body },
    });
    // Fails on its second statement: the first has committed, so running this text again would fail on it.
    await configMaps.create(sql('\\c app\nCREATE TABLE partial (i int);\nSELECT no_such_function();\n'));
    await clusters(env.client).create(
      clusterManifest('initsql', 2, {
        users: [{ name: 'app', databases: ['app'] }],
        databaseInitSQL: { name: 'init-sql', key: 'init.sql' },
      }),
    );
    const status = () =>
      clusters(env.client)
        .get('initsql', { namespace: 'default' })
        .then((c) => c.status);
    const failed = await waitFor(
      'status.databaseInitSQLRun to report the failure',
      async () => {
        const run = (await status())?.databaseInitSQLRun;
        return run?.result === 'Failed' && run.sha256 !== '' ? run : undefined;
      },
      180_000,
      500,
    );
    assert.match(failed.message ?? '', /function no_such_function\(\) does not exist/);
    assert.equal((await status())?.databaseInitSQL, undefined, 'a failed run is not recorded');
    const role = await env.client
      .resource<KubeObject & { rules: { resources: string[]; resourceNames?: string[]; verbs: string[] }[] }>(
        'rbac.authorization.k8s.io/v1',
        'Role',
      )
      .get(names.instanceServiceAccount('initsql'), { namespace: 'default' });
    assert.deepEqual(
      role.rules
        .filter((r) => r.resources.includes('configmaps') && r.verbs.includes('get'))
        .map((r) => r.resourceNames),
      [['init-sql']],
      'the agents may get only the ConfigMap the field names',
    );
    const events = await env.client.resource<KubeObject & { reason?: string; type?: string; note?: string }>(
      'events.k8s.io/v1',
      'Event',
    );
    const warning = await waitFor(
      'a Warning Event for the failed run',
      async () =>
        (await events.list({ namespace: 'default' })).items.find(
          (e) => e.reason === 'DatabaseInitSQL' && e.type === 'Warning' && /no_such_function/.test(e.note ?? ''),
        ),
      30_000,
      500,
    );
    assert.ok(warning);

    await configMaps.update(
      sql(
        '\\c app\nCREATE TABLE IF NOT EXISTS init_runs (at timestamptz DEFAULT now());\nINSERT INTO init_runs DEFAULT VALUES;\n',
      ),
    );
    // The primary looks again at its next pass over the users (at most 30 s).
    const ran = await waitFor(
      'status.databaseInitSQL to record the ConfigMap',
      async () => {
        const s = await status();
        return s?.databaseInitSQL === 'init-sql' ? s : undefined;
      },
      90_000,
      500,
    );
    assert.equal(ran.databaseInitSQLRun?.result, 'Succeeded');
    assert.notEqual(ran.databaseInitSQLRun?.sha256, failed.sha256);
    const password = await secretValue(env.client, names.superuserSecret('initsql'), 'password');
    const countRuns = async () => {
      const db = await connect(
        await serviceAddress(env.cp, 'default', 'initsql-primary', 5432),
        'postgres',
        password,
        'app',
      );
      try {
        return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM init_runs')).rows[0]?.n;
      } finally {
        await db.end();
      }
    };
    assert.equal(await countRuns(), 1, "the SQL ran in spec.users' database, once");

    // As in PGO, without the field its status goes. Set again with another key it runs again; the
    // same key would not run on the primary that ran it, which remembers its run.
    const setInitSql = (value: { name: string; key: string } | null) =>
      clusters(env.client).patch('initsql', { spec: { databaseInitSQL: value } } as never, {
        namespace: 'default',
        type: 'merge',
      });
    await setInitSql(null);
    await waitFor(
      'the databaseInitSQL status to go with the field',
      async () => {
        const s = await status();
        return s && s.databaseInitSQL === undefined && s.databaseInitSQLRun === undefined ? true : undefined;
      },
      60_000,
      500,
    );
    const current = await configMaps.get('init-sql', { namespace: 'default' });
    await configMaps.update({ ...current, data: { ...current.data, 'again.sql': current.data?.['init.sql'] ?? '' } });
    await setInitSql({ name: 'init-sql', key: 'again.sql' });
    await waitFor(
      'the SQL to run again',
      async () => ((await status())?.databaseInitSQL === 'init-sql' ? true : undefined),
      90_000,
      500,
    );
    assert.equal(await countRuns(), 2, 'set again with another key, it ran again, once');

    // A new primary reads the status: it does not run the SQL again.
    const before = (await waitReady(env.client, 'initsql', 2)).status?.primary ?? '';
    await env.client.resource('v1', 'Pod').delete(before, { namespace: 'default' });
    const after = await waitFor(
      'a new primary that has made its pass over the users',
      async () => {
        const c = await clusters(env.client).get('initsql', { namespace: 'default' });
        const primary = c.status?.primary;
        if (!primary || primary === before) return undefined;
        const pod = await env.client.resource<KubeObject & Pod>('v1', 'Pod').get(primary, { namespace: 'default' });
        const report = JSON.parse(pod.metadata?.annotations?.[ANNOTATION.status] ?? '{}');
        return report.users ? { primary, report } : undefined;
      },
      120_000,
      500,
    );
    // The SQL would have run right after that pass, in the same lap.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const pod = await env.client.resource<KubeObject & Pod>('v1', 'Pod').get(after.primary, { namespace: 'default' });
    assert.equal(JSON.parse(pod.metadata?.annotations?.[ANNOTATION.status] ?? '{}').databaseInitSQL, undefined);
    assert.equal(await countRuns(), 2, 'the new primary did not run it again');
    assert.equal((await status())?.databaseInitSQL, 'init-sql');
  });
});
