/**
 * Issue 16, finding 2: what a peer says the primary reached counts for one failover decision only.
 * A Pod labelled into the cluster answers the peer API with a forged position far beyond anything
 * the primary wrote, for its first few answers, then falls silent. Before, the replica kept the
 * forged position and passed it on, so it never took over (its lag behind a position nobody had
 * was always too large) until the agents restarted. Now it takes over once the forger is silent,
 * and never repeats the forged position in its own answers.
 *
 * With the cluster's TLS Secret and each agent's key certified (as the operator does) the peer API
 * is mutual TLS: the same forger, answering forever on the peer port with a certificate from the
 * cluster's own CA that names another instance (the primary's: before, every agent held the one
 * cluster-wide peer certificate, so any member could pass for any other), is never believed (its
 * handshake fails), and the replica takes over as if it were not there. Real agents, PostgreSQL
 * and API server; no operator.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '@kanri/client';
import { createServingCertificate } from '@kanri/runtime';
import { type ControlPlane, isProcessAlive, startControlPlane, waitFor } from '@kanri/testenv';
import { PEER_STATUS_PATH, PORT, peerCommonName } from '../src/contract/index.js';
import {
  type AgentProcess,
  createClusterObjects,
  issueClusterTls,
  killAgents,
  kubeconfigForAgents,
  makePassword,
  randomPodIPs,
  startAgent,
  startPeerSigner,
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

function forgedPeerSuite(mutualTls: boolean): void {
  describe(`instance agent: a forged peer position (${mutualTls ? 'mutual TLS' : 'plain HTTP, no peer certificate yet'})`, {
    timeout: 600_000,
  }, () => {
    let cp: ControlPlane;
    let client: KubeClient;
    let root: string;
    let forger: Server | HttpsServer | undefined;
    const agents: AgentProcess[] = [];
    const [primaryIP, replicaIP, forgerIP] = randomPodIPs(3) as [string, string, string];
    const superuser = makePassword('');
    const replication = makePassword('');
    let lies = 0;
    /** When each connection reached the forger (performance.now()): it was dialled at all. */
    const dialled: number[] = [];
    let stopSigner: (() => void) | undefined;
    const untilReady = (pod: string, role: string) => untilReportReady(client, NAMESPACE, pod, role);

    before(async () => {
      cp = await startControlPlane();
      client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
      root = mkdtempSync(join(tmpdir(), 'kanri-trust-'));
      chmodSync(root, 0o711);
      const kubeconfig = kubeconfigForAgents(root, cp.kubeconfigPath);
      const tls = mutualTls ? await issueClusterTls(CLUSTER, NAMESPACE) : undefined;
      await createClusterObjects(client, {
        ...(tls ? { tls: tls.data } : {}),
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
      // With mutual TLS it answers forever, on the peer port, with a certificate from the cluster's
      // CA that names the primary (the replica must refuse it: it dialled the forger's address).
      const stranger = tls
        ? await createServingCertificate({
            dnsNames: ['forger'],
            commonName: peerCommonName(CLUSTER, PRIMARY),
            clientAuth: true,
            ca: tls.ca,
          })
        : undefined;
      if (tls) stopSigner = startPeerSigner(client, NAMESPACE, CLUSTER, tls.ca);
      const answerForged = (request: IncomingMessage, response: ServerResponse) => {
        if (request.url !== PEER_STATUS_PATH || (!mutualTls && lies >= LIES)) {
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
      };
      forger = stranger
        ? createHttpsServer({ cert: stranger.certPem, key: stranger.keyPem }, answerForged)
        : createServer(answerForged);
      // Every TCP connection, before TLS: with mutual TLS the replica must dial the forger and then
      // refuse it, or "no request reached it" would hold for a replica that never asked.
      forger.on('connection', () => dialled.push(performance.now()));
      await new Promise<void>((resolve) => forger?.listen(mutualTls ? PORT.peer : PORT.agent, forgerIP, resolve));
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
      if (mutualTls)
        for (const agent of agents)
          await waitFor(`${agent.name} to serve the peer API with its own certificate`, () =>
            /serving the peer API over mutual TLS/.test(agent.log()),
          );
    });

    after(async () => {
      stopSigner?.();
      await killAgents(agents);
      await new Promise((resolve) => (forger ? forger.close(resolve) : resolve(undefined)));
      if (root) rmSync(root, { recursive: true, force: true });
      await client?.close();
      await cp?.stop();
    });

    it(
      mutualTls
        ? "never believes the forger, whose certificate from the cluster's CA names another instance: the replica takes over at once"
        : 'holds the replica back only while the forger answers, then it takes over and never passes the forgery on',
      async () => {
        const [primary, replica] = agents as [AgentProcess, AgentProcess];
        const postmaster = primary.postmasterPid();
        await stopAgent(primary, 'SIGKILL');
        if (postmaster) await waitFor('the old postmaster to die with its agent', () => !isProcessAlive(postmaster));
        const started = performance.now();
        const heldBack = /no replica within lag limit \(tx-a-1 lags \d{6,} MiB/;
        if (!mutualTls) {
          // While the forger answers, the replica refuses: it would lag a terabyte behind the forged position.
          assert.ok(
            await waitFor(
              'the replica to be held back by the forged position',
              () => heldBack.test(replica.log()),
              60_000,
              100,
            ),
          );
        }
        await untilReady(REPLICA, 'primary');
        const seconds = (performance.now() - started) / 1000;
        console.log(
          `# ${mutualTls ? 'mutual TLS: ' : ''}took over ${seconds.toFixed(1)} s after the primary died, after ${lies} forged answers`,
        );
        if (mutualTls) {
          const asked = dialled.filter((at) => at >= started).length;
          console.log(`# mutual TLS: the forger was dialled ${asked} times after the primary died`);
          assert.ok(
            asked > 0,
            'the replica dialled the forger after the primary died (else the refusal proves nothing)',
          );
          assert.equal(lies, 0, 'no request reached the forger: the replica refused its certificate first');
          assert.ok(!heldBack.test(replica.log()), 'the forged position never counted');
          assert.match(replica.log(), /serving the peer API over mutual TLS/);
        } else {
          assert.equal(lies, LIES, 'the forger was asked, and answered, until it fell silent');
          const own = await fetch(`http://${replicaIP}:${PORT.agent}${PEER_STATUS_PATH}`).then((r) => r.json());
          assert.notEqual(String((own as { primaryLsnSeen?: string }).primaryLsnSeen).toUpperCase(), FORGED);
        }
      },
    );
  });
}

forgedPeerSuite(false);
forgedPeerSuite(true);
