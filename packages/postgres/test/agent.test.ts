import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ForbiddenError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, isProcessAlive, startControlPlane, waitFor } from '@kanri/testenv';
import {
  API_VERSION,
  buildInstanceRoleRules,
  KIND,
  LABEL,
  names,
  PEER_FAILSAFE_PATH,
  PORT,
} from '../src/contract/index.js';
import {
  type AgentProcess,
  chownToPostgres,
  createClusterObjects,
  kubeconfigForAgents,
  makePassword,
  podReport,
  queryOnce,
  randomPodIPs,
  startAgent,
  stopAgent,
  untilReportReady,
} from './fixtures/agent-cluster.js';

const NAMESPACE = 'pg';
const CLUSTER = 'demo';
const PODS = ['demo-a-0', 'demo-a-1', 'demo-a-2'];

describe('instance agent: a three-instance cluster', { timeout: 600_000 }, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let root: string;
  let kubeconfig: string;
  const ips = randomPodIPs(3);
  const superuser = makePassword("'q");
  const replication = makePassword(':\\r');
  const app = makePassword('"a');
  const agents: AgentProcess[] = [];
  const figures: Record<string, number> = {};

  const pods = () => client.resource('v1', 'Pod');
  const reportOf = (pod: string) => podReport(client, NAMESPACE, pod);
  const leaseHolder = async () =>
    (await client.resource('coordination.k8s.io/v1', 'Lease').get(names.leaderLease(CLUSTER), { namespace: NAMESPACE }))
      .spec?.holderIdentity;
  const sql = <R extends Record<string, unknown>>(ip: string, text: string) =>
    queryOnce<R>(ip, 'postgres', superuser.password, text);
  const untilReady = (pod: string, role: string, since = new Date(0)) =>
    untilReportReady(client, NAMESPACE, pod, role, since);
  const agentFor = (index: number, bootstrap: 'initdb' | 'basebackup') =>
    startAgent({
      root,
      name: PODS[index] as string,
      ip: ips[index] as string,
      namespace: NAMESPACE,
      cluster: CLUSTER,
      bootstrap,
      kubeconfigPath: kubeconfig,
      superuserPassword: superuser.password,
      replicationPassword: replication.password,
    });
  const dumpLogs = () => {
    for (const agent of agents)
      console.log(`---- ${agent.name} log tail ----\n${agent.log().split('\n').slice(-40).join('\n')}`);
  };

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    root = mkdtempSync(join(tmpdir(), 'kanri-agent-'));
    // The agents run as the postgres user and must reach their directories below root.
    chmodSync(root, 0o711);
    // The agents run with exactly the instance Role's rules (as a user bound to it), not as admin.
    const agentUser = await cp.addUser({ name: 'instance-agent' });
    kubeconfig = kubeconfigForAgents(root, agentUser.kubeconfigPath);
    await createClusterObjects(client, {
      namespace: NAMESPACE,
      cluster: CLUSTER,
      pods: PODS.map((name, i) => ({ name, ip: ips[i] as string })),
      users: [{ name: 'app', databases: ['appdb'], options: 'CREATEDB CONNECTION LIMIT 20', password: app.password }],
      parameters: "shared_buffers = '16MB'\nmax_connections = 40\nwork_mem = '4MB'\nport = 6000\n",
    });
    await client.resource('rbac.authorization.k8s.io/v1', 'Role').create({
      metadata: { name: 'instance', namespace: NAMESPACE },
      rules: buildInstanceRoleRules(CLUSTER, ['app', 'reporter', 'evil']),
    });
    await client.resource('rbac.authorization.k8s.io/v1', 'RoleBinding').create({
      metadata: { name: 'instance', namespace: NAMESPACE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'instance' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'instance-agent' }],
    });
  });

  after(async () => {
    for (const agent of agents) await stopAgent(agent, 'SIGKILL');
    for (const agent of agents) {
      const pid = agent.postmasterPid();
      if (pid) process.kill(pid, 'SIGKILL');
    }
    if (process.env.KANRI_KEEP_AGENT_LOGS) console.log(`agent logs kept in ${root}`);
    else if (root) rmSync(root, { recursive: true, force: true });
    await client?.close();
    await cp?.stop();
    console.log('figures (ms):', JSON.stringify(figures));
  });

  it('bootstraps a primary with initdb that takes the Lease and reports on its Pod', async () => {
    const started = performance.now();
    agents.push(agentFor(0, 'initdb'));
    try {
      const report = await waitFor(
        'the first instance to report ready as primary',
        async () => {
          const r = await reportOf(PODS[0] as string);
          return r?.ready && r.role === 'primary' ? r : undefined;
        },
        90_000,
        250,
      );
      figures.primaryReady = Math.round(performance.now() - started);
      assert.match(report.systemIdentifier, /^\d{10,}$/);
      assert.equal(report.timeline, 1);
      assert.equal(await leaseHolder(), PODS[0]);
      const pod = await pods().get(PODS[0] as string, { namespace: NAMESPACE });
      assert.equal(pod.metadata?.labels?.[LABEL.role], 'primary');
      // Agent-owned settings win over the ConfigMap (port = 6000 there), user parameters apply.
      const [settings] = await sql<{ port: string; wal_level: string; shared_buffers: string; work_mem: string }>(
        ips[0] as string,
        `SELECT current_setting('port') AS port, current_setting('wal_level') AS wal_level,
                current_setting('shared_buffers') AS shared_buffers, current_setting('work_mem') AS work_mem`,
      );
      assert.deepEqual(settings, {
        port: String(PORT.postgres),
        wal_level: 'replica',
        shared_buffers: '16MB',
        work_mem: '4MB',
      });
    } catch (error) {
      dumpLogs();
      throw error;
    }
  });

  it('clones two replicas that stream from the primary through their slots', async () => {
    const started = performance.now();
    // The third instance finds what a crash in the middle of an earlier clone would leave behind.
    const leftover = join(root, PODS[2] as string, 'data');
    mkdirSync(join(leftover, 'pgdata.basebackup', 'base'), { recursive: true });
    writeFileSync(join(leftover, 'pgdata.basebackup', 'half-copied'), 'x');
    mkdirSync(join(leftover, 'pgdata'));
    for (const dir of [leftover, join(leftover, 'pgdata'), join(leftover, 'pgdata.basebackup')]) chownToPostgres(dir);
    agents.push(agentFor(1, 'basebackup'), agentFor(2, 'basebackup'));
    try {
      for (const pod of PODS.slice(1)) {
        await waitFor(
          `${pod} to report ready as replica`,
          async () => {
            const r = await reportOf(pod);
            return r?.ready && r.role === 'replica' ? r : undefined;
          },
          120_000,
          250,
        );
      }
      figures.replicasReady = Math.round(performance.now() - started);
      const primaryReport = await reportOf(PODS[0] as string);
      for (const pod of PODS.slice(1)) {
        const report = await reportOf(pod);
        assert.equal(report?.systemIdentifier, primaryReport?.systemIdentifier, `${pod} belongs to the same cluster`);
        const labels = (await pods().get(pod, { namespace: NAMESPACE })).metadata?.labels;
        assert.equal(labels?.[LABEL.role], 'replica');
      }
      const streams = await waitFor('two streaming replicas on the primary', async () => {
        const rows = await sql<{ application_name: string; state: string; slot_name: string }>(
          ips[0] as string,
          `SELECT r.application_name, r.state, s.slot_name FROM pg_stat_replication r
           JOIN pg_replication_slots s ON s.active_pid = r.pid ORDER BY r.application_name`,
        );
        return rows.length === 2 && rows.every((row) => row.state === 'streaming') ? rows : undefined;
      });
      assert.deepEqual(
        streams.map((row) => [row.application_name, row.slot_name]),
        PODS.slice(1).map((pod) => [pod, names.slot(pod)]),
      );
    } catch (error) {
      dumpLogs();
      throw error;
    }
  });

  it('replicates a row written on the primary to both replicas', async () => {
    await sql(ips[0] as string, 'CREATE TABLE probe (id int PRIMARY KEY, note text)');
    await sql(ips[0] as string, "INSERT INTO probe VALUES (1, 'written on the primary')");
    for (const ip of ips.slice(1)) {
      const rows = await waitFor(`the row on ${ip}`, async () => {
        const found = await sql<{ note: string }>(ip, 'SELECT note FROM probe WHERE id = 1');
        return found.length === 1 ? found : undefined;
      });
      assert.equal(rows[0]?.note, 'written on the primary');
    }
    await assert.rejects(sql(ips[1] as string, "INSERT INTO probe VALUES (2, 'x')"), /read-only transaction/);
  });

  it('creates the declared user and database; the user logs in with its Secret password', async () => {
    const rows = await waitFor('the app user to log in to appdb', () =>
      queryOnce<{ user: string; db: string; owner: string; createdb: boolean; connlimit: number }>(
        ips[0] as string,
        'app',
        app.password,
        `SELECT current_user AS user, current_database() AS db,
                (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()) AS owner,
                (SELECT rolcreatedb FROM pg_roles WHERE rolname = current_user) AS createdb,
                (SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user) AS connlimit`,
        'appdb',
      ),
    );
    assert.deepEqual(rows[0], { user: 'app', db: 'appdb', owner: 'app', createdb: true, connlimit: 20 });
    await assert.rejects(
      queryOnce(ips[0] as string, 'app', 'wrong-password', 'SELECT 1', 'appdb'),
      /password authentication failed/,
    );
    // The replication role works over TCP with its password (the replicas used it), and is not a superuser.
    const [role] = await sql<{ rolreplication: boolean; rolsuper: boolean }>(
      ips[0] as string,
      "SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = 'streaming_replica'",
    );
    assert.deepEqual(role, { rolreplication: true, rolsuper: false });
  });

  it('keeps a slot for every Pod of the cluster, and drops the slot of a Pod that is gone', async () => {
    const extra = 'demo-a-9';
    await pods().create({
      metadata: { name: extra, namespace: NAMESPACE, labels: { [LABEL.cluster]: CLUSTER } },
      spec: {
        serviceAccountName: names.instanceServiceAccount(CLUSTER),
        containers: [{ name: 'postgres', image: 'kanri/postgres:15' }],
      },
    });
    const slotExists = async () =>
      (await sql(ips[0] as string, `SELECT 1 FROM pg_replication_slots WHERE slot_name = '${names.slot(extra)}'`))
        .length === 1;
    await waitFor(`a slot for ${extra}`, slotExists);
    await pods().delete(extra, { namespace: NAMESPACE, gracePeriodSeconds: 0 });
    await waitFor(`the slot of ${extra} to be dropped`, async () => !(await slotExists()));
  });

  it('follows spec.users changes, and applies no spec that its own schema refuses', async () => {
    const reporter = makePassword('r');
    const secrets = client.resource('v1', 'Secret');
    for (const name of ['reporter', 'evil'])
      await secrets.create({
        metadata: { name: names.userSecret(CLUSTER, name), namespace: NAMESPACE },
        stringData: { password: reporter.password },
      });
    const clusters = client.resource<KubeObject>(API_VERSION, KIND);
    const setUsers = (users: unknown[]) =>
      clusters.patch(CLUSTER, { spec: { users } }, { namespace: NAMESPACE, type: 'merge' });
    const app = { name: 'app', databases: ['appdb'], options: 'CREATEDB CONNECTION LIMIT 20' };
    const reporterUser = { name: 'reporter', databases: ['reports'] };
    // The test CRD admits anything; the agent decodes with the API's schema, which refuses an
    // option outside the allow-list (as the real CRD does at admission): no part of it applies.
    await setUsers([app, reporterUser, { name: 'evil', options: 'SUPERUSER; DROP TABLE probe' }]);
    await waitFor('the agent to refuse the spec, naming the field', () =>
      /the PostgresCluster spec does not decode \(spec\.users\[2\]\.options\)/.test((agents[0] as AgentProcess).log()),
    );
    const roles = async () =>
      (
        await sql<{ rolname: string }>(
          ips[0] as string,
          "SELECT rolname FROM pg_roles WHERE rolname IN ('evil', 'reporter')",
        )
      ).map((row) => row.rolname);
    assert.deepEqual(await roles(), [], 'no part of a refused spec is applied');
    await setUsers([app, reporterUser]);
    await waitFor('reporter to log in to reports', () =>
      queryOnce(ips[0] as string, 'reporter', reporter.password, 'SELECT 1', 'reports'),
    );
    assert.deepEqual(await roles(), ['reporter']);
  });

  it('serves /healthz, /readyz and /metrics on the Pod IP', async () => {
    for (const [i, ip] of ips.entries()) {
      const base = `http://${ip}:${PORT.agent}`;
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      assert.match(metrics, /^kanri_postgres_up 1$/m);
      assert.match(metrics, /^kanri_postgres_timeline 1$/m);
      const rss = Number(/^process_resident_memory_bytes (\d+)/m.exec(metrics)?.[1]);
      assert.ok(rss > 0);
      figures[`agentRssMiB${i}`] = Math.round(rss / 2 ** 20);
      const role = i === 0 ? 'primary' : 'replica';
      assert.match(metrics, new RegExp(`^kanri_postgres_role\\{role="${role}"\\} 1$`, 'm'));
      assert.match(metrics, /^kanri_postgres_replayed_lsn_bytes [1-9]\d*$/m);
    }
  });

  it('refuses POST /failsafe over plain HTTP: an agent without a peer certificate vouches for nobody', async () => {
    // These agents have no peer certificate (no operator certifies them): plain HTTP is all they serve.
    const replica = ips[1] as string;
    const response = await fetch(`http://${replica}:${PORT.agent}${PEER_FAILSAFE_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: PODS[0] }),
      signal: AbortSignal.timeout(5_000),
    });
    const body = await response.text();
    assert.equal(response.status, 403, body);
    assert.match(body, /only to a certified peer over mutual TLS/);
    assert.doesNotMatch(agents[1]?.log() ?? '', /vouched for the primary/);
  });

  it('applies a changed parameter from the ConfigMap with a reload', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    const current = await configMaps.get(names.config(CLUSTER), { namespace: NAMESPACE });
    await configMaps.patch(
      names.config(CLUSTER),
      {
        data: {
          'postgresql.conf': (current.data?.['postgresql.conf'] ?? '').replace("work_mem = '4MB'", "work_mem = '12MB'"),
        },
      },
      { namespace: NAMESPACE, type: 'merge' },
    );
    for (const ip of ips) {
      await waitFor(`work_mem = 12MB on ${ip}`, async () => {
        const [row] = await sql<{ work_mem: string }>(ip, 'SHOW work_mem');
        return row?.work_mem === '12MB';
      });
    }
  });

  it('restarts a crashed postgres, and restarted agents resume their roles without re-cloning', async () => {
    // A postmaster killed outright comes back (with backoff) under the same agent.
    const replica = agents[2] as AgentProcess;
    const crashed = replica.postmasterPid();
    assert.ok(crashed);
    process.kill(crashed, 'SIGKILL');
    await waitFor('a new postmaster on the replica', () => {
      const pid = replica.postmasterPid();
      return pid !== undefined && pid !== crashed;
    });
    await untilReady(PODS[2] as string, 'replica');
    const metrics = await (await fetch(`http://${ips[2]}:${PORT.agent}/metrics`)).text();
    assert.match(metrics, /^kanri_postgres_unexpected_exits_total 1$/m);

    // A replica agent stopped and started again follows at once from its own data.
    assert.deepEqual(await stopAgent(agents[1] as AgentProcess, 'SIGTERM'), { code: 0, signal: null });
    const restarted = new Date();
    agents[1] = agentFor(1, 'basebackup');
    await untilReady(PODS[1] as string, 'replica', restarted);
    // Only what the restarted agent did counts: its first start may have retried a clone under load.
    const clonesSinceRestart = agents[1]
      .log()
      .split('\n')
      .filter((line) => line.includes('pg_basebackup: cloning'))
      .filter((line) => Number(/"time":(\d+)/.exec(line)?.[1] ?? Number.POSITIVE_INFINITY) >= restarted.getTime());
    assert.deepEqual(clonesSinceRestart, [], 'the restarted replica did not clone again');
    assert.match(agents[1].log(), /"plan":"follow"/);

    // A primary agent killed outright: its postgres dies with it; started again, it still holds the Lease.
    const primaryPostmaster = (agents[0] as AgentProcess).postmasterPid();
    assert.ok(primaryPostmaster);
    await stopAgent(agents[0] as AgentProcess, 'SIGKILL');
    await waitFor('the primary postmaster to die with its agent', () => !isProcessAlive(primaryPostmaster));
    const restartedPrimary = new Date();
    agents[0] = agentFor(0, 'initdb');
    await untilReady(PODS[0] as string, 'primary', restartedPrimary);
    assert.match(agents[0].log(), /"plan":"lead"/);
    assert.equal((agents[0].log().match(/initdb: creating a new cluster/g) ?? []).length, 1, 'initialised only once');
    const [row] = await sql<{ note: string }>(ips[0] as string, 'SELECT note FROM probe WHERE id = 1');
    assert.equal(row?.note, 'written on the primary');
    for (const ip of ips.slice(1)) {
      await waitFor(`${ip} to stream again`, async () => {
        const [r] = await sql<{ status: string }>(ip, 'SELECT status FROM pg_stat_wal_receiver');
        return r?.status === 'streaming';
      });
    }
    // Users were reconciled on every lap of both primary runs, but each change was made once.
    const primaryLog = (agents[0] as AgentProcess).log();
    assert.equal((primaryLog.match(/"action":"create-role","name":"app"/g) ?? []).length, 1);
    assert.equal((primaryLog.match(/"action":"create-database","name":"appdb"/g) ?? []).length, 1);
    assert.equal((primaryLog.match(/"action":"set-password"/g) ?? []).length, 0);
  });

  it('stops cleanly on SIGTERM: postgres gone, the Lease released, exit 0', async () => {
    const [primary, ...replicas] = agents as [AgentProcess, AgentProcess, AgentProcess];
    const postmaster = primary.postmasterPid();
    assert.ok(postmaster, 'the primary has a postmaster');
    const stopped = performance.now();
    const exit = await stopAgent(primary, 'SIGTERM');
    figures.primaryStop = Math.round(performance.now() - stopped);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.equal(isProcessAlive(postmaster), false, 'no postgres left behind');
    // Released, not left to expire: a replica takes it over at once (or it is still free).
    assert.notEqual(await leaseHolder(), PODS[0], 'the Lease was released');
    assert.match(primary.log(), /released the lease/);
    assert.match(primary.log(), /database system is shut down/);
    const report = await reportOf(PODS[0] as string);
    assert.equal(report?.ready, false);

    for (const replica of replicas) {
      const pid = replica.postmasterPid();
      assert.ok(pid);
      assert.deepEqual(await stopAgent(replica, 'SIGTERM'), { code: 0, signal: null });
      assert.equal(isProcessAlive(pid), false);
    }
  });

  it('ran with a Role that allows no more than the instance needs', async () => {
    const asAgent = await KubeClient.load({ kubeconfig });
    try {
      await assert.rejects(
        asAgent.resource('v1', 'Secret').get(names.superuserSecret(CLUSTER), { namespace: NAMESPACE }),
        ForbiddenError,
      );
      await assert.rejects(asAgent.resource('v1', 'ConfigMap').list({ namespace: NAMESPACE }), ForbiddenError);
      await assert.rejects(
        asAgent.resource('v1', 'Pod').delete(PODS[1] as string, { namespace: NAMESPACE }),
        ForbiddenError,
      );
      const secret = await asAgent
        .resource('v1', 'Secret')
        .get(names.userSecret(CLUSTER, 'app'), { namespace: NAMESPACE });
      assert.ok(secret.data?.password);
    } finally {
      await asAgent.close();
    }
  });

  it('never logs a password, and never met a forbidden request', () => {
    for (const agent of agents) {
      const log = agent.log();
      assert.equal(
        /forbidden/i.test(log),
        false,
        `${agent.name} was refused a request: the instance Role misses a rule`,
      );
      assert.ok(log.length > 1000, `${agent.name} logged`);
      for (const secret of [superuser, replication, app]) {
        assert.equal(log.includes(secret.core), false, `${agent.name}'s log holds a password`);
      }
    }
  });
});
