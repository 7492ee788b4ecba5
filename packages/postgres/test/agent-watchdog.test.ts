/**
 * The keeper around the instance agent (src/agent/keeper), end to end with default HA settings:
 * - a primary whose agent alone is stalled (SIGSTOP) takes no write once its renew deadline has
 *   passed, because its keeper's watchdog stops postgres: the old primary takes no write after the
 *   new primary's first, and no two instances take writes at once;
 * - a primary whose agent alone is killed (kill -9) keeps postgres running: the keeper restarts
 *   the agent, which adopts the running postgres and keeps the Lease, with no failover.
 * Processes are found and signalled by PID only (support/instance-processes.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { isProcessAlive, waitFor } from '@kanri/testenv';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseOf,
  PACED_WRITES,
  podsOf,
  reportOf,
  SequenceWriter,
  SplitBrainWatcher,
  sql,
  startFailoverEnv,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';
import { childrenOf, containerLog, instanceProcesses, postmasterPid } from './support/instance-processes.js';

const CLUSTER = 'keep';

describe('the keeper: a stalled agent is fenced by its watchdog, a killed agent keeps its postgres', {
  timeout: 20 * 60_000,
}, () => {
  let env: FailoverEnv;
  let password: string;
  const ipOf = new Map<string, string>();
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const reportFor = async (pod: string) =>
    reportOf((await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === pod));

  before(async () => {
    env = await startFailoverEnv();
    env.startOperator();
    await clusters(env.client).create(failoverCluster(CLUSTER, 2));
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 2);
    for (const pod of pods) ipOf.set(pod.metadata?.name ?? '', pod.status?.podIP ?? '');
    password = await superuserPassword(env.client, CLUSTER);
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE brain (pod text, at timestamptz DEFAULT now())');
  });

  after(async () => {
    await env?.stop();
  });

  it("a primary's agent stalled (SIGSTOP): the keeper stops postgres, the old primary takes no write after the new primary's first, no split brain", async () => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 2);
    const primaryIP = ipOf.get(primary) as string;
    const writer = new SequenceWriter(env.cp, CLUSTER, password, PACED_WRITES);
    const watcher = new SplitBrainWatcher(
      [...ipOf].map(([name, ip]) => ({ name, ip })),
      password,
    );
    writer.start();
    watcher.start();
    try {
      await waitFor('writes to flow', () => writer.acks.length > 20, 60_000, 50);
      const processes = await instanceProcesses(env.cp, primary, primaryIP, password);
      const stoppedAt = performance.now();
      process.kill(processes.agent, 'SIGSTOP');
      let holder = primary;
      let postgresGoneAt = 0;
      let takenAt = 0;
      try {
        await waitFor('the keeper to stop postgres', () => !isProcessAlive(processes.postmaster), 60_000, 50);
        postgresGoneAt = performance.now();
        await waitFor(
          'the replica to take the Lease',
          async () => {
            holder = (await leaseOf(env.client, CLUSTER)).spec?.holderIdentity ?? '';
            takenAt = performance.now();
            return holder !== primary && holder !== '';
          },
          60_000,
          50,
        );
        // Both the client's and the watcher's: each reconnects on its own, and both are compared below.
        await waitFor(
          'a write on the new primary',
          () =>
            writer.acks.some((a) => a.host === ipOf.get(holder)) &&
            watcher.accepted.some((a) => a.pod === holder && a.start > stoppedAt),
          60_000,
        );
        // Still stalled: the stop above was the watchdog's doing, not the agent's.
        assert.equal(readState(processes.agent), 'T', 'the agent was stopped throughout');
      } finally {
        process.kill(processes.agent, 'SIGCONT');
      }
      const newIP = ipOf.get(holder) as string;
      const firstNewAck = writer.acks.find((a) => a.host === newIP);
      const lastOldAck = writer.acks.filter((a) => a.host === primaryIP).at(-1);
      const firstNew = watcher.accepted.find((a) => a.pod === holder && a.start > stoppedAt);
      const lastOld = watcher.accepted.filter((a) => a.pod === primary).at(-1);
      assert.ok(firstNewAck && lastOldAck && firstNew && lastOld);
      console.log(
        `# stalled agent (default HA: renew deadline 10 s, lease 15 s): postgres stopped by the keeper ${seconds(postgresGoneAt - stoppedAt)} after the SIGSTOP; last write on the old primary ${seconds(lastOld.end - stoppedAt)} after; Lease taken by ${holder} ${seconds(takenAt - stoppedAt)} after; its first write ${seconds(firstNew.start - stoppedAt)} after`,
      );
      assert.ok(lastOld.end < firstNew.start, 'the old primary took no write after the new primary took its first');
      assert.ok(
        lastOldAck.at < firstNewAck.at,
        "no acknowledged write on the old primary after the new primary's first",
      );
      assert.match(
        containerLog(env.cp, primary),
        /WATCHDOG: the agent did not renew its leadership before the deadline/,
      );
      await waitFor(
        `${primary} to rejoin as a replica once its agent runs again`,
        async () => {
          const r = await reportFor(primary);
          return r?.role === 'replica' && r.ready;
        },
        180_000,
        250,
      );
      await watcher.stop();
      assert.deepEqual(watcher.blindSpans(), [], 'the watcher probed every instance throughout');
      assert.deepEqual(watcher.violations(), []);
      console.log(`# split-brain moments: ${watcher.violations().length} (${watcher.probes} probes)`);
    } finally {
      await writer.stop();
      await watcher.stop();
    }
  });

  it("a primary's agent killed (kill -9): postgres keeps running, the restarted agent keeps the Lease, writes go on", async () => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 2);
    const primaryIP = ipOf.get(primary) as string;
    const leaseBefore = await leaseOf(env.client, CLUSTER);
    const transitions = (leaseBefore.spec as { leaseTransitions?: number } | undefined)?.leaseTransitions;
    // A new writer counts from 1 again.
    await sql(primaryIP, password, 'TRUNCATE seq');
    const writer = new SequenceWriter(env.cp, CLUSTER, password, PACED_WRITES);
    writer.start();
    try {
      await waitFor('writes to flow', () => writer.acks.length > 20, 60_000, 50);
      const processes = await instanceProcesses(env.cp, primary, primaryIP, password);
      const killedAt = performance.now();
      const killedAtWall = Date.now();
      process.kill(processes.agent, 'SIGKILL');
      const agent = await waitFor(
        'the keeper to start a new agent',
        () => childrenOf(processes.keeper).find((pid) => pid !== processes.postmaster && pid !== processes.agent),
        30_000,
        20,
      );
      const restartedAt = performance.now();
      await waitFor(
        'the new agent to report the primary ready',
        async () => {
          const r = await reportFor(primary);
          return r?.role === 'primary' && r.ready && Date.parse(r.updatedAt) > killedAtWall;
        },
        60_000,
        100,
      );
      const readyAt = performance.now();
      await waitFor('writes after the restart', () => writer.acks.filter((a) => a.at > readyAt).length > 20, 60_000);
      const around = writer.acks.filter((a) => a.at > killedAt - 2_000);
      const gaps = around.slice(1).map((a, i) => a.at - (around[i] as { at: number }).at);
      const longest = Math.max(...gaps);
      console.log(
        `# killed agent: new agent ${processes.agent} -> ${agent} ${seconds(restartedAt - killedAt)} after the kill; primary ready again ${seconds(readyAt - killedAt)} after; longest write gap ${Math.round(longest)} ms; ${writer.errors} client errors`,
      );
      assert.ok(isProcessAlive(processes.postmaster), 'the same postmaster still runs');
      assert.equal(await postmasterPid(primaryIP, password), processes.postmaster);
      assert.ok(
        writer.acks.every((a) => a.host === primaryIP || a.at < killedAt),
        'every write went to the same primary',
      );
      const leaseAfter = await leaseOf(env.client, CLUSTER);
      assert.equal(leaseAfter.spec?.holderIdentity, primary, 'the Lease stayed with the same Pod');
      assert.equal((leaseAfter.spec as { leaseTransitions?: number } | undefined)?.leaseTransitions, transitions);
      const log = containerLog(env.cp, primary);
      assert.match(log, /the agent exited unexpectedly; restarting it/);
      assert.match(log, /"plan":"lead"[^\n]*"msg":"adoption plan"/);
      assert.doesNotMatch(log.slice(log.lastIndexOf('the agent exited unexpectedly')), /WATCHDOG/);
    } finally {
      await writer.stop();
    }
  });
});

/** The state letter of a process (R, S, T for stopped, ...), from /proc. */
function readState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '';
}
