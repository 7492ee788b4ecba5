/**
 * The leader history on the Lease (issue 14, defect 1): after a failover and writes on the new
 * primary, the former primary boots while the Lease is free. Its timeline is behind the one the
 * new primary recorded, so it must not lead (it would serve, and later rewind the new primary
 * onto, a history without those writes); once the new primary is back, it follows it, and no
 * acknowledged commit is lost. Real agents, PostgreSQL and API server; no operator.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, isProcessAlive, startControlPlane, waitFor } from '@kanri/testenv';
import { names, readLeaderHistory } from '../src/contract/index.js';
import {
  type AgentProcess,
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

const NAMESPACE = 'history';
const CLUSTER = 'hx';
const [FIRST, SECOND] = ['hx-a-0', 'hx-a-1'] as const;
const HA = { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1 };

describe('instance agent: the leader history on the Lease', { timeout: 600_000 }, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let root: string;
  let kubeconfig: string;
  const agents: AgentProcess[] = [];
  const [firstIP, secondIP] = randomPodIPs(2) as [string, string];
  const superuser = makePassword('');
  const replication = makePassword('');
  const common = () => ({
    root,
    namespace: NAMESPACE,
    cluster: CLUSTER,
    kubeconfigPath: kubeconfig,
    superuserPassword: superuser.password,
    replicationPassword: replication.password,
  });
  const start = (name: string, ip: string, bootstrap: 'initdb' | 'basebackup') => {
    const agent = startAgent({ ...common(), name, ip, bootstrap });
    agents.push(agent);
    return agent;
  };
  const reportOf = (pod: string) => podReport(client, NAMESPACE, pod);
  const untilReady = (pod: string, role: string) => untilReportReady(client, NAMESPACE, pod, role);
  const lease = () =>
    client.resource('coordination.k8s.io/v1', 'Lease').get(names.leaderLease(CLUSTER), { namespace: NAMESPACE });
  const rows = (ip: string) =>
    queryOnce<{ n: number }>(ip, 'postgres', superuser.password, 'SELECT n FROM acked ORDER BY n').then((r) =>
      r.map((x) => x.n),
    );

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    root = mkdtempSync(join(tmpdir(), 'kanri-history-'));
    chmodSync(root, 0o711);
    kubeconfig = kubeconfigForAgents(root, cp.kubeconfigPath);
    await createClusterObjects(client, {
      namespace: NAMESPACE,
      cluster: CLUSTER,
      pods: [
        { name: FIRST, ip: firstIP },
        { name: SECOND, ip: secondIP },
      ],
      parameters: "shared_buffers = '16MB'\nmax_connections = 30\n",
      ha: HA,
    });
    start(FIRST, firstIP, 'initdb');
    start(SECOND, secondIP, 'basebackup');
    await untilReady(FIRST, 'primary');
    await untilReady(SECOND, 'replica');
  });

  after(async () => {
    await killAgents(agents);
    if (root) rmSync(root, { recursive: true, force: true });
    await client?.close();
    await cp?.stop();
  });

  it('a former primary behind the recorded timeline never leads from a free Lease, then follows; nothing acknowledged is lost', async () => {
    await queryOnce(firstIP, 'postgres', superuser.password, 'CREATE TABLE acked (n int PRIMARY KEY)');
    await queryOnce(firstIP, 'postgres', superuser.password, 'INSERT INTO acked VALUES (0)');
    await waitFor('the replica to have row 0', async () => ((await rows(secondIP)).includes(0) ? true : undefined));
    assert.equal(readLeaderHistory((await lease()).metadata?.annotations)?.timeline, 1);

    // The primary's host dies (agent and postgres at once); the replica fails over.
    const [firstAgent] = agents as [AgentProcess];
    const postmaster = firstAgent.postmasterPid();
    await stopAgent(firstAgent, 'SIGKILL');
    if (postmaster) await waitFor('the old postmaster to die with its agent', () => !isProcessAlive(postmaster));
    await untilReady(SECOND, 'primary');
    const recorded = await waitFor('the new primary to record its timeline', async () => {
      const h = readLeaderHistory((await lease()).metadata?.annotations);
      return h && h.timeline >= 2 && h.holder === SECOND && h.lsn ? h : undefined;
    });
    const acknowledged: number[] = [];
    for (let n = 1; n <= 20; n++) {
      await queryOnce(secondIP, 'postgres', superuser.password, `INSERT INTO acked VALUES (${n})`);
      acknowledged.push(n);
    }

    // The new primary stops cleanly: it releases the Lease, which is free when the old one boots.
    await stopAgent(agents[1] as AgentProcess, 'SIGTERM');
    assert.equal((await lease()).spec?.holderIdentity ?? '', '');
    const former = start(FIRST, firstIP, 'initdb');
    const waiting = await waitFor(
      'the former primary to say why it does not lead',
      async () => {
        const r = await reportOf(FIRST);
        return r?.message?.includes('not leading') ? r : undefined;
      },
      60_000,
      250,
    );
    assert.match(
      waiting.message ?? '',
      new RegExp(`behind the leader's timeline ${recorded.timeline} \\(recorded by ${SECOND}`),
    );
    // Several lease durations with the Lease free: it never takes it, and serves no writes.
    await sleep(3 * HA.leaseDurationSeconds * 1_000);
    assert.equal((await lease()).spec?.holderIdentity ?? '', '', 'the Lease stays free');
    assert.equal(former.postmasterPid(), undefined, 'the former primary runs no postgres');
    assert.match(former.log(), /"msg":"not taking the lease"/);

    // The new primary comes back and leads again; the former one rewinds and follows it.
    start(SECOND, secondIP, 'basebackup');
    await untilReady(SECOND, 'primary');
    await untilReady(FIRST, 'replica');
    assert.deepEqual(await rows(secondIP), [0, ...acknowledged]);
    await waitFor('the former primary to replay every acknowledged row', async () =>
      (await rows(firstIP)).length === acknowledged.length + 1 ? true : undefined,
    );
    assert.deepEqual(await rows(firstIP), [0, ...acknowledged]);
  });
});
