import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { formatMicroTime, KubeClient } from '@kanri/client';
import {
  type ControlPlane,
  type FaultProxy,
  isProcessAlive,
  startControlPlane,
  startFaultProxy,
  waitFor,
} from '@kanri/testenv';
import { chooseSocketDir } from '../src/agent/config.js';
import { LABEL, names } from '../src/contract/index.js';
import {
  type AgentProcess,
  chownToPostgres,
  createClusterObjects,
  killAgents,
  kubeconfigForAgents,
  makePassword,
  podReport,
  queryOnce,
  randomPodIPs,
  startAgent,
  stopAgent,
  untilReportReady,
} from './fixtures/agent-cluster.js';

const NAMESPACE = 'fence';
const CLUSTER = 'fx';
const [PRIMARY, REPLICA, GHOST] = ['fx-a-0', 'fx-a-1', 'fx-ghost'] as const;

/**
 * Short HA timings so the test sees a lost Lease within seconds. Without the failsafe mode: here a
 * primary cut off from the API server alone must fence (with it, the replica would vouch for it;
 * failover-failsafe.test.ts tests that).
 */
const HA = { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1, failsafeMode: false };

describe('instance agent: fencing and following the Lease', { timeout: 600_000 }, () => {
  let cp: ControlPlane;
  let proxy: FaultProxy;
  let client: KubeClient;
  let root: string;
  let primary: AgentProcess;
  let replica: AgentProcess;
  const [primaryIP, replicaIP, ghostIP] = randomPodIPs(3) as [string, string, string];
  const superuser = makePassword('');
  const replication = makePassword('');
  const figures: Record<string, number> = {};

  const reportOf = (pod: string) => podReport(client, NAMESPACE, pod);
  const accepts = (ip: string) =>
    queryOnce(ip, 'postgres', superuser.password, 'SELECT 1').then(
      () => true,
      () => false,
    );
  const untilReady = (pod: string, role: string) => untilReportReady(client, NAMESPACE, pod, role);
  const dumpLogs = () => {
    for (const agent of [primary, replica].filter(Boolean))
      console.log(`---- ${agent.name} log tail ----\n${agent.log().split('\n').slice(-40).join('\n')}`);
  };

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    proxy = await startFaultProxy(cp.server);
    root = mkdtempSync(join(tmpdir(), 'kanri-fence-'));
    chmodSync(root, 0o711);
    const kubeconfig = kubeconfigForAgents(root, cp.kubeconfigPath);
    // The primary reaches the API server only through the proxy, so the test can cut it off alone.
    const proxied = join(root, 'kubeconfig-proxied');
    writeFileSync(proxied, readFileSync(kubeconfig, 'utf8').replace(cp.server, proxy.url), { mode: 0o600 });
    chownToPostgres(proxied);
    await createClusterObjects(client, {
      namespace: NAMESPACE,
      cluster: CLUSTER,
      pods: [
        { name: PRIMARY, ip: primaryIP },
        { name: REPLICA, ip: replicaIP },
      ],
      parameters: "shared_buffers = '16MB'\nmax_connections = 30\n",
      ha: HA,
    });
    const common = {
      root,
      namespace: NAMESPACE,
      cluster: CLUSTER,
      superuserPassword: superuser.password,
      replicationPassword: replication.password,
    };
    // Both start together, as the operator starts them: the replica waits for a primary to clone.
    const started = performance.now();
    primary = startAgent({
      ...common,
      name: PRIMARY,
      ip: primaryIP,
      bootstrap: 'initdb',
      kubeconfigPath: proxied,
      // Too long for a unix socket path: postgres gets a short fallback directory under /tmp.
      runDirName: `run-${'x'.repeat(90)}`,
    });
    replica = startAgent({
      ...common,
      name: REPLICA,
      ip: replicaIP,
      bootstrap: 'basebackup',
      kubeconfigPath: kubeconfig,
    });
    try {
      await untilReady(PRIMARY, 'primary');
      await untilReady(REPLICA, 'replica');
    } catch (error) {
      dumpLogs();
      throw error;
    }
    figures.bothReadyFromColdStart = Math.round(performance.now() - started);
  });

  after(async () => {
    await killAgents([primary, replica]);
    await proxy?.close();
    if (process.env.KANRI_KEEP_AGENT_LOGS) console.log(`agent logs kept in ${root}`);
    else if (root) rmSync(root, { recursive: true, force: true });
    await client?.close();
    await cp?.stop();
    console.log('figures (ms):', JSON.stringify(figures));
  });

  it('a primary cut off from the API server stops postgres, and resumes when it can renew again', async () => {
    const postmaster = primary.postmasterPid();
    assert.ok(postmaster);
    const cut = performance.now();
    proxy.refuseNew(true);
    proxy.dropAll();
    try {
      await waitFor('the primary to stop postgres (fencing)', () => !isProcessAlive(postmaster), 30_000, 100);
      figures.fencedAfterCut = Math.round(performance.now() - cut);
      assert.equal(await accepts(primaryIP), false, 'the fenced primary takes no connections');
      assert.equal(primary.child.exitCode, null, 'the agent itself keeps running');
      // postgres is stopped the moment the leadership is lost; the agent logs why just after.
      await waitFor("the FENCING line in the primary's log", () => /FENCING/.test(primary.log()), 10_000, 100);
      assert.match(primary.log(), /"msg":"FENCING: stopping postgres/);
    } finally {
      proxy.refuseNew(false);
    }
    // Nobody took the Lease meanwhile: the same instance renews it and serves again.
    await waitFor('the primary to accept connections again', () => accepts(primaryIP), 60_000, 250);
    await untilReady(PRIMARY, 'primary');
    await untilReady(REPLICA, 'replica');
  });

  it('a primary whose Lease is taken stops postgres; the replica follows the new holder', async () => {
    await client.resource('v1', 'Pod').create({
      // A member of the cluster, as every Lease holder is: the agents follow their cluster's Pods.
      metadata: { name: GHOST, namespace: NAMESPACE, labels: { [LABEL.cluster]: CLUSTER } },
      spec: {
        serviceAccountName: names.instanceServiceAccount(CLUSTER),
        containers: [{ name: 'postgres', image: 'kanri/postgres:15' }],
      },
    });
    await client
      .resource('v1', 'Pod')
      .patchStatus(
        GHOST,
        { status: { podIP: ghostIP, podIPs: [{ ip: ghostIP }] } },
        { namespace: NAMESPACE, type: 'merge' },
      );
    const postmaster = primary.postmasterPid();
    assert.ok(postmaster);
    const leases = client.resource('coordination.k8s.io/v1', 'Lease');
    const lease = await leases.get(names.leaderLease(CLUSTER), { namespace: NAMESPACE });
    await leases.update({
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: GHOST,
        leaseDurationSeconds: 600,
        renewTime: formatMicroTime(new Date()),
      },
    });

    await waitFor('the former primary to stop postgres', () => !isProcessAlive(postmaster), 30_000, 100);
    const report = await waitFor('the former primary to report why it waits', async () => {
      const r = await reportOf(PRIMARY);
      return r?.message?.startsWith('former primary') ? r : undefined;
    });
    assert.equal(report.ready, false);
    assert.equal(report.role, 'replica');
    assert.match(report.message ?? '', new RegExp(GHOST));
    assert.match(primary.log(), /"reason":"fx-ghost holds the leader Lease now","msg":"FENCING/);
    await waitFor(`the replica to stream from ${GHOST}'s address`, async () => {
      const [row] = await queryOnce<{ primary_conninfo: string }>(
        replicaIP,
        'postgres',
        superuser.password,
        'SHOW primary_conninfo',
      );
      return row?.primary_conninfo.includes(`host=${ghostIP} `);
    });
    const [slot] = await queryOnce<{ primary_slot_name: string }>(
      replicaIP,
      'postgres',
      superuser.password,
      'SHOW primary_slot_name',
    );
    assert.equal(slot?.primary_slot_name, names.slot(REPLICA));
  });

  it("postgres dies with the agent's main process (its keeper), even when that is killed outright", async () => {
    const postmaster = replica.postmasterPid();
    assert.ok(postmaster);
    await stopAgent(replica, 'SIGKILL');
    await waitFor(
      'the replica postmaster to exit after its agent was killed',
      () => !isProcessAlive(postmaster),
      30_000,
      100,
    );
    assert.equal(await accepts(replicaIP), false);
    // A fenced former primary (postgres already stopped) still ends cleanly on SIGTERM, and removes
    // the fallback socket directory it used.
    const fallback = chooseSocketDir(primary.runDir);
    assert.notEqual(fallback, primary.runDir);
    assert.match(primary.log(), new RegExp(`"socketDir":"${fallback}"`));
    assert.deepEqual(await stopAgent(primary, 'SIGTERM'), { code: 0, signal: null });
    assert.equal(existsSync(fallback), false);
  });
});
