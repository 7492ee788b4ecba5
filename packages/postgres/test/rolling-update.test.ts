/**
 * Issue 15, rolling updates, end to end on 3 process nodes under write load through
 * `<name>-primary`, in synchronous mode: an image change from Debian's 15.18 to Debian's 15.20 (bookworm-security's) updates
 * the replicas one at a time (no instance's old Pod goes before the one replaced before it is
 * ready again), then switches over once (the leader Lease changes hands once: Events are no
 * count, the recorder drops them after 25 per object) and updates the old primary, losing no
 * acknowledged commit; an image that cannot run halts the rollout after the first replica, with
 * the primary untouched and a condition naming the Pod, and reverting the image heals it. Restart-only
 * parameters restart postgres in place (same Pods), replicas first, or the primary first when a
 * hot-standby limit decreases. `supervised` stops after the replicas until the switchover
 * annotation; an updated replica beyond `maximumLagOnFailover` holds the switchover, and the status
 * says why.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEBIAN_POSTGRES_BIN, postgresVersionOf, waitFor } from '@kanri/testenv';
import { ANNOTATION } from '../src/contract/index.js';
import { IMAGE } from './harness.js';
import { clusterEvents, occurrences, overlappingOutages } from './support/cluster-observers.js';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseTransitions,
  podsOf,
  reportOf,
  SequenceWriter,
  sql,
  startFailoverEnv,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';

const CLUSTER = 'roll';
const FROM = postgresVersionOf(DEBIAN_POSTGRES_BIN); // 15.18 here
// Debian's bookworm-security 15.20 (testenv fetches it); a machine already on 15.20 rolls to PyPI's 15.19.
const TO = FROM === '15.20' ? '15.19' : '15.20';

/**
 * Each Pod's UID as first seen; when a new UID replaced it, when the old Pod was first seen deleted
 * or gone, and when the new one was first seen ready (its agent's report: what the rollout waits
 * for), all performance.now(). Every poll is one list, one view of every Pod at once.
 */
class ReplacementLog {
  readonly replacedAt = new Map<string, number>();
  readonly downAt = new Map<string, number>();
  readonly readyAt = new Map<string, number>();
  readonly #uids = new Map<string, string>();
  #stop = new AbortController();
  #running: Promise<void> | undefined;

  constructor(private readonly env: FailoverEnv) {}

  start(): void {
    this.#running = (async () => {
      while (!this.#stop.signal.aborted) {
        const pods = await podsOf(this.env.client, CLUSTER).catch(() => undefined);
        const now = performance.now();
        for (const pod of pods ?? []) {
          const name = pod.metadata?.name ?? '';
          const uid = pod.metadata?.uid ?? '';
          const known = this.#uids.get(name);
          if (known === undefined) this.#uids.set(name, uid);
          else if (known !== uid && !this.replacedAt.has(name)) this.replacedAt.set(name, now);
          if (known === uid && pod.metadata?.deletionTimestamp && !this.downAt.has(name)) this.downAt.set(name, now);
          if (known !== undefined && known !== uid && reportOf(pod)?.ready && !this.readyAt.has(name))
            this.readyAt.set(name, now);
        }
        // A Pod deleted and gone between two polls: out from this poll on.
        for (const name of this.#uids.keys())
          if (pods && !this.downAt.has(name) && !pods.some((p) => p.metadata?.name === name))
            this.downAt.set(name, now);
        await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }
}

describe('rolling updates of the instance Pods', { timeout: 20 * 60_000 }, () => {
  let env: FailoverEnv;
  let password: string;
  const cluster = () => clusters(env.client).get(CLUSTER, { namespace: 'default' });
  const setImage = (tag: string) =>
    clusters(env.client).patch(
      CLUSTER,
      { spec: { image: `${IMAGE}:${tag}` } },
      { namespace: 'default', type: 'merge' },
    );
  const rolledOut = (tag: string) =>
    waitFor(
      `every instance on ${tag}, the rollout idle`,
      async () => {
        const c = await cluster();
        const pods = await podsOf(env.client, CLUSTER);
        const versions = pods.map((p) => reportOf(p)?.serverVersion);
        const done =
          c.status?.rollout?.phase === 'Idle' &&
          c.status.rollout.updated === 3 &&
          versions.length === 3 &&
          versions.every((v) => v === tag);
        return done ? c : undefined;
      },
      8 * 60_000,
      500,
    );

  before(async () => {
    env = await startFailoverEnv();
    await env.startOperator();
    const manifest = failoverCluster(CLUSTER, 3, { synchronous: { number: 1 } });
    await clusters(env.client).create({ ...manifest, spec: { ...manifest.spec, image: `${IMAGE}:${FROM}` } });
    const { pods } = await waitHealthy(env.client, CLUSTER, 3);
    password = await superuserPassword(env.client, CLUSTER);
    const primary = (await waitHealthy(env.client, CLUSTER, 3)).primary;
    const ip = pods.find((p) => p.metadata?.name === primary)?.status?.podIP ?? '';
    await sql(ip, password, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
  });
  after(async () => {
    await env?.stop();
  });

  it(`an image change ${FROM} → ${TO} updates the replicas one at a time, switches over once, and loses no commit`, async () => {
    const { primary: oldPrimary } = await waitHealthy(env.client, CLUSTER, 3);
    const transitionsBefore = await leaseTransitions(env.client, CLUSTER);
    const writer = new SequenceWriter(env.cp, CLUSTER, password);
    const replacements = new ReplacementLog(env);
    replacements.start();
    writer.start();
    await waitFor('writes flowing', async () => writer.acks.length > 20, 30_000, 100);
    const started = performance.now();
    await setImage(TO);
    const done = await rolledOut(TO);
    const { primary: newPrimary, pods } = await waitHealthy(env.client, CLUSTER, 3);
    await sleep(1_000);
    await writer.stop();
    await replacements.stop();
    const at = (ms: number) => `${((ms - started) / 1000).toFixed(1)} s`;
    console.log(`# rollout ${FROM} → ${TO}: ${((performance.now() - started) / 1000).toFixed(1)} s`);

    // Replicas first, one at a time; the old primary last.
    assert.deepEqual(
      [...replacements.replacedAt.keys()].sort(),
      pods.map((p) => p.metadata?.name ?? '').sort(),
      'every Pod was replaced once',
    );
    const order = [...replacements.replacedAt].sort((a, b) => a[1] - b[1]).map(([name]) => name);
    assert.equal(order.at(-1), oldPrimary, `the old primary is replaced last (order ${order.join(', ')})`);
    const outages = order.map((pod) => ({
      pod,
      from: replacements.downAt.get(pod) ?? Number.NaN,
      to: replacements.readyAt.get(pod),
    }));
    assert.ok(
      outages.every((o) => Number.isFinite(o.from)),
      `every old Pod was seen going: ${JSON.stringify(outages)}`,
    );
    const windows = outages
      .map((o) => `${o.pod} out ${at(o.from)}–${o.to === undefined ? 'never ready' : at(o.to)}`)
      .join(', ');
    console.log(`# one at a time: ${windows}`);
    assert.deepEqual(overlappingOutages(outages), [], `one instance at a time: ${windows}`);
    assert.notEqual(newPrimary, oldPrimary);
    const transitions = (await leaseTransitions(env.client, CLUSTER)) - transitionsBefore;
    const changes = (await clusterEvents(env.client, CLUSTER)).filter((e) => e.reason === 'PrimaryChanged');
    assert.equal(
      transitions,
      1,
      `exactly one change of primary (the Lease changed hands ${transitions} times; Events: ${changes.map((e) => e.note).join('; ')})`,
    );
    assert.equal(done.status?.conditions?.find((c) => c.type === 'RolloutHalted')?.status, 'False');

    for (const pod of pods) {
      const [row] = await sql<{ v: string }>(
        pod.status?.podIP ?? '',
        password,
        "SELECT current_setting('server_version') AS v",
      );
      assert.match(row?.v ?? '', new RegExp(`^${TO.replace('.', '\\.')}`), pod.metadata?.name);
    }
    const ip = pods.find((p) => p.metadata?.name === newPrimary)?.status?.podIP ?? '';
    const stored = new Set((await sql<{ n: string }>(ip, password, 'SELECT n FROM seq')).map((r) => Number(r.n)));
    const lost = writer.acks.filter((a) => !stored.has(a.n));
    let gap = 0;
    let gapAt = 0;
    for (let i = 1; i < writer.acks.length; i++) {
      const length = (writer.acks[i]?.at ?? 0) - (writer.acks[i - 1]?.at ?? 0);
      if (length > gap) [gap, gapAt] = [length, writer.acks[i - 1]?.at ?? 0];
    }
    console.log(
      `# acknowledged ${writer.acks.length}, lost ${lost.length}, longest write gap ${(gap / 1000).toFixed(2)} s from ${at(gapAt)}; Pods replaced at ${order.map((name) => `${name} ${at(replacements.replacedAt.get(name) ?? 0)}`).join(', ')}; writer errors ${writer.errors}`,
    );
    assert.deepEqual(lost, [], 'no acknowledged commit is lost in synchronous mode');
  });

  it('an image that cannot run halts the rollout after the first replica; reverting heals it', async () => {
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 3);
    const uids = new Map(pods.map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));
    await setImage('13');
    const halted = await waitFor(
      'the rollout to halt',
      async () => {
        const c = await cluster();
        return c.status?.rollout?.phase === 'Halted' ? c : undefined;
      },
      3 * 60_000,
      500,
    );
    const condition = halted.status?.conditions?.find((c) => c.type === 'RolloutHalted');
    assert.equal(condition?.status, 'True');
    assert.equal(condition?.reason, 'InstanceCannotRun');
    const stuck = halted.status?.rollout?.current ?? '';
    assert.notEqual(stuck, primary);
    assert.match(condition?.message ?? '', new RegExp(`^${stuck} cannot run: ErrImagePull`));
    // Halted means halted: nothing else is touched for a while.
    await sleep(10_000);
    const now = await podsOf(env.client, CLUSTER);
    const changed = now
      .filter((p) => uids.get(p.metadata?.name ?? '') !== p.metadata?.uid)
      .map((p) => p.metadata?.name);
    assert.deepEqual(changed, [stuck], 'only the first replica was replaced');
    assert.equal((await cluster()).status?.rollout?.phase, 'Halted');

    await setImage(TO);
    const healed = await rolledOut(TO);
    assert.equal(healed.status?.conditions?.find((c) => c.type === 'RolloutHalted')?.status, 'False');
    const after = await waitHealthy(env.client, CLUSTER, 3);
    assert.equal(after.primary, primary, 'the primary was never touched');
  });

  /** Each instance's postmaster start time, by Pod name. */
  const startTimes = async () => {
    const out = new Map<string, string>();
    for (const pod of await podsOf(env.client, CLUSTER)) {
      const [row] = await sql<{ t: string }>(
        pod.status?.podIP ?? '',
        password,
        'SELECT pg_postmaster_start_time()::text AS t',
      );
      out.set(pod.metadata?.name ?? '', row?.t ?? '');
    }
    return out;
  };
  const setParameter = (name: string, value: string | number) =>
    clusters(env.client).patch(
      CLUSTER,
      { spec: { config: { parameters: { [name]: value } } } },
      { namespace: 'default', type: 'merge' },
    );
  /**
   * Waits until the cluster is at rest: healthy, no rollout, nothing pending or being restarted,
   * and every postmaster up since the same time across a 2 s interval. The restart tests measure
   * "once per instance" from here, so a restart still under way from the test before (CI once
   * read a server mid-shutdown right after the halted rollout healed) must not count or fail.
   * Says which instance was still moving, for the record.
   */
  const atRest = () =>
    waitFor(
      'the cluster at rest (healthy, nothing pending, no postmaster restarting)',
      async () => {
        const healthy = await waitHealthy(env.client, CLUSTER, 3);
        const busy = healthy.pods.find((p) => {
          const report = reportOf(p);
          const token = p.metadata?.annotations?.[ANNOTATION.restartPostgres];
          return (report?.pendingRestart?.length ?? 0) > 0 || (token !== undefined && token !== report?.restartServed);
        });
        if (busy) throw new Error(`${busy.metadata?.name} has a restart pending or in flight`);
        if ((await cluster()).status?.rollout?.phase !== 'Idle') throw new Error('the rollout is not idle');
        const first = await startTimes();
        await sleep(2_000);
        const second = await startTimes();
        const moved = [...first].filter(([name, t]) => second.get(name) !== t).map(([name]) => name);
        if (moved.length > 0) console.log(`# ${moved.join(', ')} restarted while the cluster was thought at rest`);
        return moved.length === 0 ? healthy : undefined;
      },
      3 * 60_000,
      500,
    );
  /** Waits until every instance restarted since `before` and none has a parameter pending. */
  const restartedAll = (before: Map<string, string>) =>
    waitFor(
      'every instance restarted in place, nothing pending',
      async () => {
        const now = await startTimes();
        const pods = await podsOf(env.client, CLUSTER);
        const pending = pods.some((p) => (reportOf(p)?.pendingRestart?.length ?? 0) > 0);
        const all = [...before].every(([name, t]) => now.get(name) !== undefined && now.get(name) !== t);
        return all && !pending && (await cluster()).status?.rollout?.phase === 'Idle' ? now : undefined;
      },
      5 * 60_000,
      500,
    );

  it('a restart-only parameter restarts every instance once in place, replicas first, with no new Pod and no switchover', async () => {
    const { primary, pods } = await atRest();
    const uids = new Map(pods.map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));
    const before = await startTimes();
    const restartsBefore = occurrences(await clusterEvents(env.client, CLUSTER), 'Restarted');
    await setParameter('shared_buffers', '32MB');
    const after = await restartedAll(before);
    const order = [...after].sort((a, b) => a[1].localeCompare(b[1])).map(([name]) => name);
    assert.equal(order.at(-1), primary, `the primary restarts last (order ${order.join(', ')})`);
    const now = await waitHealthy(env.client, CLUSTER, 3);
    assert.equal(now.primary, primary, 'no switchover');
    for (const pod of now.pods) {
      assert.equal(pod.metadata?.uid, uids.get(pod.metadata?.name ?? ''), `${pod.metadata?.name} is the same Pod`);
      const [row] = await sql<{ v: string; pending: string }>(
        pod.status?.podIP ?? '',
        password,
        "SELECT current_setting('shared_buffers') AS v, (SELECT count(*) FROM pg_settings WHERE pending_restart)::text AS pending",
      );
      assert.deepEqual([row?.v, row?.pending], ['32MB', '0'], pod.metadata?.name);
    }
    const events = await clusterEvents(env.client, CLUSTER);
    const restarts = events.filter((e) => e.reason === 'Restarted');
    assert.equal(
      occurrences(events, 'Restarted') - restartsBefore,
      3,
      restarts.map((e) => `${e.note} ×${e.count}`).join('; '),
    );
  });

  it('lowering max_connections restarts the primary first, without a switchover, and no replica refuses the lower value', async () => {
    const { primary } = await atRest();
    const before = await startTimes();
    await setParameter('max_connections', 30);
    const after = await restartedAll(before);
    const order = [...after].sort((a, b) => a[1].localeCompare(b[1])).map(([name]) => name);
    assert.equal(order[0], primary, `the primary restarts first (order ${order.join(', ')})`);
    const now = await waitHealthy(env.client, CLUSTER, 3);
    assert.equal(now.primary, primary, 'no switchover');
    for (const pod of now.pods) {
      const [row] = await sql<{ v: string }>(
        pod.status?.podIP ?? '',
        password,
        "SELECT current_setting('max_connections') AS v",
      );
      assert.equal(row?.v, '30', pod.metadata?.name);
    }
    assert.doesNotMatch(await env.allLogs(), /insufficient parameter settings/);
  });

  const patchCluster = (body: Record<string, unknown>) =>
    clusters(env.client).patch(CLUSTER, body, { namespace: 'default', type: 'merge' });
  const rolloutPhase = (what: string, test: (rollout: { phase: string; message?: string }) => boolean) =>
    waitFor(
      what,
      async () => {
        const c = await cluster();
        return c.status?.rollout && test(c.status.rollout) ? c : undefined;
      },
      5 * 60_000,
      500,
    );
  /** Changes of primary so far: the leader Lease's transitions (Events stop after 25 per object). */
  const primaryChanges = () => leaseTransitions(env.client, CLUSTER);
  const uidsNow = async () =>
    new Map((await podsOf(env.client, CLUSTER)).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));
  const replacedSince = async (uids: Map<string, string>) =>
    [...(await uidsNow())]
      .filter(([name, uid]) => uids.get(name) !== uid)
      .map(([name]) => name)
      .sort();

  it('supervised: updates the replicas, waits with a stated phase and the primary untouched, and completes after the switchover annotation', async () => {
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 3);
    const uids = await uidsNow();
    const changes = await primaryChanges();
    await patchCluster({
      metadata: { annotations: { [ANNOTATION.restart]: 'supervised-1' } },
      spec: { primaryUpdateStrategy: 'supervised' },
    });
    const waiting = await rolloutPhase('the rollout to wait for the user', (r) => r.phase === 'WaitingForUser');
    assert.equal(waiting.status?.rollout?.current, primary);
    assert.equal(waiting.status?.rollout?.updated, 2);
    assert.match(waiting.status?.rollout?.message ?? '', /primaryUpdateStrategy is supervised/);
    // Waiting means waiting: no switchover and no primary update of its own.
    await sleep(10_000);
    const replicas = pods.map((p) => p.metadata?.name ?? '').filter((n) => n !== primary);
    assert.deepEqual(await replacedSince(uids), replicas.sort(), 'the replicas, and only they, were replaced');
    assert.equal((await cluster()).status?.rollout?.phase, 'WaitingForUser');
    assert.equal(await primaryChanges(), changes, 'no switchover before the annotation');

    await patchCluster({ metadata: { annotations: { [ANNOTATION.switchover]: '*' } } });
    await rolloutPhase('the rollout to finish', (r) => r.phase === 'Idle');
    const after = await waitHealthy(env.client, CLUSTER, 3);
    assert.notEqual(after.primary, primary);
    assert.deepEqual(await replacedSince(uids), [...uids.keys()].sort(), 'every Pod was replaced, the old primary too');
    assert.equal(await primaryChanges(), changes + 1, 'exactly one switchover');
  });

  it('an updated replica beyond maximumLagOnFailover holds the switchover, and the status says why', async () => {
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 3);
    const uids = await uidsNow();
    const changes = await primaryChanges();
    const ipOf = (name: string) => pods.find((p) => p.metadata?.name === name)?.status?.podIP ?? '';
    await patchCluster({
      metadata: { annotations: { [ANNOTATION.restart]: 'lagging-1' } },
      spec: { primaryUpdateStrategy: 'supervised', ha: { maximumLagOnFailover: 1024 * 1024 } },
    });
    await rolloutPhase('the replicas updated', (r) => r.phase === 'WaitingForUser');
    const updated = await waitHealthy(env.client, CLUSTER, 3);
    const laggard = updated.pods.map((p) => p.metadata?.name ?? '').find((n) => n !== primary) as string;
    const laggardIp = updated.pods.find((p) => p.metadata?.name === laggard)?.status?.podIP ?? '';
    await sql(laggardIp, password, 'SELECT pg_wal_replay_pause()');
    try {
      // About 8 MB of WAL that the paused replica receives but does not replay.
      await sql(
        ipOf(primary),
        password,
        "CREATE TABLE filler AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 50000) g",
      );
      // Beyond the limit as the cluster knows it: the replica's report (refreshed every 10 s).
      await waitFor(
        `${laggard} to report its lag`,
        async () => ((await cluster()).status?.instances?.find((i) => i.name === laggard)?.lagBytes ?? 0) > 1024 * 1024,
        60_000,
        500,
      );
      await patchCluster({ spec: { primaryUpdateStrategy: 'unsupervised' } });
      const held = await rolloutPhase(
        `the rollout to wait for ${laggard}`,
        (r) => r.phase === 'WaitingForInstance' && (r.message ?? '').includes(laggard),
      );
      assert.match(
        held.status?.rollout?.message ?? '',
        new RegExp(`waiting for the updated ${laggard} to catch up \\(\\d+ bytes behind, limit 1048576\\)`),
      );
      await sleep(10_000);
      assert.equal(await primaryChanges(), changes, 'no switchover while an updated replica lags');
      assert.deepEqual(await replacedSince(uids), [...uids.keys()].filter((n) => n !== primary).sort());
    } finally {
      await sql(laggardIp, password, 'SELECT pg_wal_replay_resume()');
    }
    await rolloutPhase('the rollout to finish', (r) => r.phase === 'Idle');
    const after = await waitHealthy(env.client, CLUSTER, 3);
    assert.notEqual(after.primary, primary);
    assert.equal(await primaryChanges(), changes + 1, 'exactly one switchover, once the replica caught up');
    const newPrimaryIp = after.pods.find((p) => p.metadata?.name === after.primary)?.status?.podIP ?? '';
    await sql(newPrimaryIp, password, 'DROP TABLE filler');
  });
});
