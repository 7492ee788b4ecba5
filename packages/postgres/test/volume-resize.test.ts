/**
 * Issue 41: data volumes that grow, on testenv's sized volumes (SIZED_STORAGE_CLASS: ext4 on a loop
 * device per claim, which the provisioner expands online as a CSI driver and the kubelet would).
 * - Resize: raising a set's request under pgbench's TPC-B load grows every instance's claim, one at
 *   a time, and the filesystem each agent reads (`df` in its Pod, status.instances[].dataVolume);
 *   pgbench ends with no failed transaction; no Pod was replaced and no postgres restarted.
 * - Auto-grow: a pgbench load of incompressible rows that would fill the volume several times
 *   over runs to its end with no failed transaction, without DiskFull or a step-down, while the
 *   operator grows the claim step by step, never past its limit.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { DEBIAN_POSTGRES_BIN, SIZED_STORAGE_CLASS, serviceAddress, waitFor } from '@kanri/testenv';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { LABEL, names, type PostgresCluster } from '../src/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  secretValue,
  startPostgresEnv,
  waitReady,
} from './harness.js';

const MI = 2 ** 20;
/** Small WAL between checkpoints: the volumes are small, and the load's own rows must fill them. */
const PARAMETERS = { shared_buffers: '16MB', min_wal_size: '32MB', max_wal_size: '64MB', wal_keep_size: '0' };

interface PgbenchRun {
  readonly child: ChildProcess;
  readonly done: Promise<{ code: number | null; output: string }>;
}

/** pgbench against `address` as the superuser, its output kept for the summary. */
function pgbench(address: string, password: string, args: readonly string[], input?: string): PgbenchRun {
  const [host, port] = address.split(':');
  const child = spawn(
    `${DEBIAN_POSTGRES_BIN}/pgbench`,
    ['-h', host ?? '', '-p', port ?? '', '-U', 'postgres', ...args],
    {
      env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: '5' },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    },
  );
  child.stdin?.end(input);
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const done = new Promise<{ code: number | null; output: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, output })),
  );
  return { child, done };
}

const failedTransactions = (output: string) => Number(/number of failed transactions: (\d+)/.exec(output)?.[1] ?? NaN);
const processedTransactions = (output: string) =>
  Number(/number of transactions actually processed: (\d+)/.exec(output)?.[1] ?? NaN);

describe('data volumes that grow', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  const runs: PgbenchRun[] = [];
  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    const storageClass = await env.client
      .resource<KubeObject>('storage.k8s.io/v1', 'StorageClass')
      .get(SIZED_STORAGE_CLASS)
      .catch((error: Error) => error);
    // Sized volumes need root and loop devices: without them this test cannot say anything.
    assert.ok(!(storageClass instanceof Error), `testenv's ${SIZED_STORAGE_CLASS} class: ${String(storageClass)}`);
    await env.startOperator();
  });
  after(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await env?.stop();
  });

  const sized = (name: string, replicas: number, storage: string, extra: Record<string, unknown> = {}) => {
    const manifest = clusterManifest(name, replicas, { config: { parameters: PARAMETERS } });
    return {
      ...manifest,
      spec: {
        ...manifest.spec,
        instances: [
          {
            name: 'i',
            replicas,
            dataVolumeClaimSpec: {
              accessModes: ['ReadWriteOnce'],
              storageClassName: SIZED_STORAGE_CLASS,
              resources: { requests: { storage } },
              ...extra,
            },
          },
        ],
      },
    } as PostgresCluster;
  };
  const claimsOf = async (cluster: string) =>
    (
      await env.client
        .resource<KubeObject & PersistentVolumeClaim>('v1', 'PersistentVolumeClaim')
        .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${cluster}` })
    ).items;
  const podsOf = async (cluster: string) =>
    (
      await env.client
        .resource<KubeObject & Pod>('v1', 'Pod')
        .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${cluster},${LABEL.instance}` })
    ).items;
  /** Each instance's postmaster start time, asked of each directly: a restart changes it. */
  const startTimes = async (cluster: string, password: string) => {
    const times: Record<string, string> = {};
    for (const pod of await podsOf(cluster)) {
      const db = await connect(`${pod.status?.podIP}:5432`, 'postgres', password);
      try {
        const [row] = (await db.query<{ t: string }>('SELECT pg_postmaster_start_time()::text AS t')).rows;
        times[pod.metadata?.name ?? ''] = row?.t ?? '';
      } finally {
        await db.end();
      }
    }
    return times;
  };

  it('grows every claim and filesystem online under pgbench, one at a time, with no failed transaction or restart', async () => {
    await clusters(env.client).create(sized('grow', 2, '256Mi'));
    await waitReady(env.client, 'grow', 2);
    const password = await secretValue(env.client, names.superuserSecret('grow'), 'password');
    const address = await serviceAddress(env.cp, 'default', names.primaryService('grow'), 5432);
    const init = pgbench(address, password, ['-i', '-s', '2', '-q', 'postgres']);
    runs.push(init);
    const initialised = await init.done;
    assert.equal(initialised.code, 0, initialised.output);
    const podsBefore = Object.fromEntries((await podsOf('grow')).map((p) => [p.metadata?.name, p.metadata?.uid]));
    const startedBefore = await startTimes('grow', password);
    const sizesBefore = (await clusters(env.client).get('grow', { namespace: 'default' })).status?.instances?.map(
      (i) => i.dataVolume?.sizeBytes ?? 0,
    );
    assert.ok(
      sizesBefore?.every((size) => size > 200 * MI && size <= 256 * MI),
      `df in each Pod shows its own 256Mi filesystem: ${sizesBefore}`,
    );

    const load = pgbench(address, password, ['-c', '2', '-T', '45', '-n', 'postgres']);
    runs.push(load);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const current = await clusters(env.client).get('grow', { namespace: 'default' });
    const [set] = current.spec.instances;
    assert.ok(set);
    await clusters(env.client).patch(
      'grow',
      {
        spec: {
          instances: [
            {
              ...set,
              dataVolumeClaimSpec: { ...set.dataVolumeClaimSpec, resources: { requests: { storage: '384Mi' } } },
            },
          ],
        },
      },
      { namespace: 'default', type: 'merge' },
    );
    const patchedAt = performance.now();
    // One claim at a time: never both asking for more than they have.
    let bothAtOnce = false;
    let sawResizing = false;
    const grown = await waitFor(
      'every filesystem grown to about 384Mi, and the condition False',
      async () => {
        const claims = await claimsOf('grow');
        const inFlight = claims.filter(
          (c) => c.spec?.resources?.requests?.storage === '384Mi' && c.status?.capacity?.storage !== '384Mi',
        );
        if (inFlight.length > 1) bothAtOnce = true;
        const c = await clusters(env.client).get('grow', { namespace: 'default' });
        const condition = c.status?.conditions?.find((x) => x.type === 'PersistentVolumeResizing');
        if (condition?.status === 'True') sawResizing = true;
        const sizes = (c.status?.instances ?? []).map((i) => i.dataVolume?.sizeBytes ?? 0);
        return condition?.status === 'False' && sizes.length === 2 && sizes.every((s) => s > 330 * MI) ? c : undefined;
      },
      180_000,
      200,
    );
    const resizeSeconds = (performance.now() - patchedAt) / 1000;
    assert.equal(bothAtOnce, false, 'the claims grew one after the other');
    assert.equal(sawResizing, true, 'PersistentVolumeResizing was True while it ran');
    for (const claim of await claimsOf('grow'))
      assert.equal(claim.status?.capacity?.storage, '384Mi', claim.metadata?.name);
    assert.ok(
      grown.status?.instances?.every((i) => (i.dataVolume?.sizeBytes ?? 0) <= 384 * MI),
      'the filesystem is the claim, not the host',
    );

    const result = await load.done;
    assert.equal(result.code, 0, result.output);
    assert.equal(failedTransactions(result.output), 0, result.output);
    assert.ok(processedTransactions(result.output) > 0, result.output);
    console.log(
      `resize 256Mi → 384Mi of 2 instances under pgbench: ${resizeSeconds.toFixed(1)} s; filesystems ${grown.status?.instances?.map((i) => Math.round((i.dataVolume?.sizeBytes ?? 0) / MI)).join(', ')} MiB; pgbench ${processedTransactions(result.output)} transactions, ${failedTransactions(result.output)} failed`,
    );
    const podsAfter = Object.fromEntries((await podsOf('grow')).map((p) => [p.metadata?.name, p.metadata?.uid]));
    assert.deepEqual(podsAfter, podsBefore, 'no Pod was replaced');
    assert.deepEqual(await startTimes('grow', password), startedBefore, 'no postgres restarted');
    const events = await env.client
      .resource<KubeObject & { reason?: string; note?: string }>('events.k8s.io/v1', 'Event')
      .list({ namespace: 'default' });
    const steps = events.items.filter(
      (e) => e.reason === 'VolumeResizing' && /grow-i-\d-pgdata: 256Mi → 384Mi/.test(e.note ?? ''),
    );
    assert.equal(steps.length, 2, 'one VolumeResizing Event per claim');
  });

  it('auto-grows a volume that a load would fill, step by step up to its limit, with no failed transaction or step-down', async () => {
    await clusters(env.client).create(
      sized('auto', 1, '160Mi', {
        resources: { requests: { storage: '160Mi' }, limits: { storage: '1Gi' } },
        autoGrow: { trigger: 60 },
      }),
    );
    const ready = await waitReady(env.client, 'auto', 1);
    const primary = ready.status?.primary;
    const password = await secretValue(env.client, names.superuserSecret('auto'), 'password');
    const address = await serviceAddress(env.cp, 'default', names.primaryService('auto'), 5432);
    const db = await connect(address, 'postgres', password);
    try {
      await db.query('CREATE TABLE fill (payload text)');
      // Random text does not compress (TOAST would shrink a repeated one to nothing).
      await db.query('ALTER TABLE fill ALTER COLUMN payload SET STORAGE EXTERNAL');
    } finally {
      await db.end();
    }
    // 750 transactions of about 320 KiB each: some 235 MiB, where the volume starts at 160Mi with
    // about 40 MiB of it used. At most 16 a second (5 MiB/s), so that each step has time to land;
    // a count, not a duration, so a slow machine writes as much, only later.
    const script =
      "INSERT INTO fill SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 2000), generate_series(1, 5) AS r GROUP BY r;\n";
    const load = pgbench(address, password, ['-n', '-c', '1', '-R', '16', '-t', '750', '-f', '-', 'postgres'], script);
    runs.push(load);
    const result = await load.done;
    assert.equal(result.code, 0, result.output);
    assert.equal(failedTransactions(result.output), 0, result.output);
    assert.equal(processedTransactions(result.output), 750, result.output);

    const check = await connect(address, 'postgres', password);
    let tableBytes: number;
    try {
      tableBytes = Number(
        (await check.query<{ n: string }>("SELECT pg_total_relation_size('fill')::text AS n")).rows[0]?.n,
      );
    } finally {
      await check.end();
    }
    assert.ok(
      tableBytes > 200 * MI,
      `the load wrote more than the volume first had: ${Math.round(tableBytes / MI)} MiB`,
    );
    const [claim] = await claimsOf('auto');
    const grownTo = claim?.spec?.resources?.requests?.storage ?? '';
    const grownMi = Number(/^(\d+)Mi$/.exec(grownTo)?.[1]);
    assert.ok(grownMi > 160 && grownMi <= 1024, `the claim grew within its limit: ${grownTo}`);
    const cluster = await clusters(env.client).get('auto', { namespace: 'default' });
    assert.equal(cluster.status?.primary, primary, 'no step-down: the same primary');
    const diskFull = cluster.status?.conditions?.find((c) => c.type === 'DiskFull');
    assert.notEqual(diskFull?.status, 'True', `never full: ${diskFull?.message}`);
    const events = await env.client
      .resource<KubeObject & { reason?: string; note?: string }>('events.k8s.io/v1', 'Event')
      .list({ namespace: 'default' });
    const grows = events.items.filter(
      (e) => e.reason === 'VolumeResizing' && /auto-i-0-pgdata: .*autoGrow/.test(e.note ?? ''),
    );
    assert.ok(grows.length >= 2, `auto-grow took several steps: ${grows.map((e) => e.note).join(' | ')}`);
    console.log(
      `auto-grow: ${Math.round(tableBytes / MI)} MiB written by ${processedTransactions(result.output)} transactions (${failedTransactions(result.output)} failed); the claim 160Mi → ${grownTo} in ${grows.length} steps: ${grows.map((e) => e.note).join(' | ')}`,
    );
    assert.equal(
      events.items.filter((e) => e.reason === 'DiskFull' || e.reason === 'SteppedDown').length,
      0,
      'no DiskFull or SteppedDown Event',
    );
  });
});
