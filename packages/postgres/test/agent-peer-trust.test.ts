/**
 * Issue 16, finding 2: what a peer says the primary reached counts for one failover decision only.
 * A Pod labelled into the cluster answers the peer API with a forged position far beyond anything
 * the primary wrote, for its first few answers, then falls silent. Before, the replica kept the
 * forged position and passed it on, so it never took over (its lag behind a position nobody had
 * was always too large) until the agents restarted. Now it takes over once the forger is silent,
 * and never repeats the forged position in its own answers. Real agents, PostgreSQL and API
 * server; no operator.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, isProcessAlive, startControlPlane, waitFor } from '@kanri/testenv';
import { PEER_STATUS_PATH, PORT } from '../src/contract/index.js';
import {
  type AgentProcess,
  createClusterObjects,
  killAgents,
  kubeconfigForAgents,
  makePassword,
  randomPodIPs,
  startAgent,
  stopAgent,
  untilReportReady,
} from './fixtures/agent-cluster.js';

const NAMESPACE = 'trust';
const CLUSTER = 'tx';
const [PRIMARY, REPLICA, FORGER] = ['tx-a-0', 'tx-a-1', 'tx-a-2'] as const;
const HA = { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1, failsafeMode: false };
const FORGED = 'FF/FF000000';
/** How many answers the forger gives before it falls silent. */
const LIES = 3;

describe('instance agent: a forged peer position', { timeout: 600_000 }, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let root: string;
  let forger: Server | undefined;
  const agents: AgentProcess[] = [];
  const [primaryIP, replicaIP, forgerIP] = randomPodIPs(3) as [string, string, string];
  const superuser = makePassword('');
  const replication = makePassword('');
  let lies = 0;
  const untilReady = (pod: string, role: string) => untilReportReady(client, NAMESPACE, pod, role);

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    root = mkdtempSync(join(tmpdir(), 'kanri-trust-'));
    chmodSync(root, 0o711);
    const kubeconfig = kubeconfigForAgents(root, cp.kubeconfigPath);
    await createClusterObjects(client, {
      namespace: NAMESPACE,
      cluster: CLUSTER,
      pods: [
        { name: PRIMARY, ip: primaryIP },
        { name: REPLICA, ip: replicaIP },
        { name: FORGER, ip: forgerIP },
      ],
      parameters: "shared_buffers = '16MB'\nmax_connections = 30\n",
      ha: HA,
    });
    // The forger: well-formed answers (a malformed one would simply be ignored), not a candidate
    // itself, claiming the primary reached FORGED; after LIES answers it stops answering.
    forger = createServer((request, response) => {
      if (request.url !== PEER_STATUS_PATH || lies >= LIES) {
        request.socket.destroy();
        return;
      }
      lies++;
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({
          role: 'replica',
          ready: false,
          timeline: 1,
          systemIdentifier: '1',
          receivedLsn: '0/0',
          replayedLsn: '0/0',
          lagBytes: 0,
          updatedAt: new Date().toISOString(),
          name: FORGER,
          candidate: false,
          candidateWhy: 'forging',
          primaryLsnSeen: FORGED,
          receiverStatus: null,
        }),
      );
    });
    await new Promise<void>((resolve) => forger?.listen(PORT.agent, forgerIP, resolve));
    const common = {
      root,
      namespace: NAMESPACE,
      cluster: CLUSTER,
      kubeconfigPath: kubeconfig,
      superuserPassword: superuser.password,
      replicationPassword: replication.password,
    };
    agents.push(startAgent({ ...common, name: PRIMARY, ip: primaryIP, bootstrap: 'initdb' }));
    agents.push(startAgent({ ...common, name: REPLICA, ip: replicaIP, bootstrap: 'basebackup' }));
    await untilReady(PRIMARY, 'primary');
    await untilReady(REPLICA, 'replica');
  });

  after(async () => {
    await killAgents(agents);
    await new Promise((resolve) => (forger ? forger.close(resolve) : resolve(undefined)));
    if (root) rmSync(root, { recursive: true, force: true });
    await client?.close();
    await cp?.stop();
  });

  it('holds the replica back only while the forger answers, then it takes over and never passes the forgery on', async () => {
    const [primary, replica] = agents as [AgentProcess, AgentProcess];
    const postmaster = primary.postmasterPid();
    await stopAgent(primary, 'SIGKILL');
    if (postmaster) await waitFor('the old postmaster to die with its agent', () => !isProcessAlive(postmaster));
    const started = performance.now();
    // While the forger answers, the replica refuses: it would lag a terabyte behind the forged position.
    const held = await waitFor(
      'the replica to be held back by the forged position',
      () => /no replica within lag limit \(tx-a-1 lags \d{6,} MiB/.test(replica.log()),
      60_000,
      100,
    );
    assert.ok(held);
    await untilReady(REPLICA, 'primary');
    const seconds = (performance.now() - started) / 1000;
    console.log(`# took over ${seconds.toFixed(1)} s after the primary died, after ${lies} forged answers`);
    assert.equal(lies, LIES, 'the forger was asked, and answered, until it fell silent');
    const own = await fetch(`http://${replicaIP}:${PORT.agent}${PEER_STATUS_PATH}`).then((r) => r.json());
    assert.notEqual(String((own as { primaryLsnSeen?: string }).primaryLsnSeen).toUpperCase(), FORGED);
    assert.ok(replica.log().length > 0);
  });
});
