/**
 * Backups when things go wrong (issue 19's acceptance 7, 9 and 6), against the real control plane,
 * real PostgreSQL 15, the pinned pgBackRest and a real S3 server: an S3 outage under write load
 * (WALArchiving turns False, a backup fails rather than hangs, archiving recovers without a gap), a
 * corrupted backup file (a clone fails with pgBackRest's reason, never silently), and the total
 * loss of a cluster (a clone from the bare repo loses at most the last archive_timeout).
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { type S3Server, waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { readPodReport } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import {
  BUCKET,
  backupsOf,
  backupsSpec,
  CREDS_SECRET,
  prepareS3,
  repoPathOf,
  repoPrefix,
  s3DataSource,
  s3Global,
  waitArchived as waitArchivedIn,
} from './support/backup-fixtures.js';
import { archivedSegments, repoObjects, segmentGaps } from './support/backup-repo.js';
import { clusterEvents, dataClaims, instancePods, waitForClusterEvent } from './support/cluster-observers.js';
import { nodeOf, PACED_WRITES, podsOf, SequenceWriter, sql, superuserPassword } from './support/failover-env.js';

const SOURCE = 'ledger';
const ARCHIVE_TIMEOUT_S = 10;
const OUTAGE_MS = 120_000;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
type ClusterStatus = {
  conditions?: Condition[];
  archive?: { lastArchivedWal?: string; pendingSegments?: number };
  pgbackrest?: { manualBackup?: { id?: string; name?: string } };
};

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('backups under failure: S3 outage, corrupted backup, total loss', { timeout: 20 * 60_000 }, () => {
  let env: PostgresEnv;
  let s3: S3Server;
  let writer: SequenceWriter | undefined;

  const status = async (cluster: string) =>
    (await clusters(env.client).get(cluster, { namespace: 'default' })).status as ClusterStatus | undefined;
  const condition = async (cluster: string, type: string) =>
    (await status(cluster))?.conditions?.find((c) => c.type === type);
  const primaryIp = async (cluster: string) => {
    const pod = (await podsOf(env.client, cluster)).find((p) => readPodReport(p)?.role === 'primary');
    if (!pod?.status?.podIP) throw new Error(`${cluster} has no primary`);
    return { pod: pod.metadata?.name ?? '', ip: pod.status.podIP };
  };
  const query = async <R extends Record<string, unknown>>(cluster: string, text: string, params: unknown[] = []) =>
    sql<R>((await primaryIp(cluster)).ip, await superuserPassword(env.client, cluster), text, params);
  const switchWal = async (cluster: string) =>
    (await query<{ wal: string }>(cluster, 'SELECT pg_walfile_name(pg_switch_wal()) AS wal'))[0]?.wal ?? '';
  const waitArchived = (cluster: string, wal: string) => waitArchivedIn(env, cluster, wal);
  /** A new annotation value requests one backup; resolves its PostgresBackup's name. */
  const requestBackup = async (value: string) => {
    await clusters(env.client).patch(
      SOURCE,
      { metadata: { annotations: { 'postgres.kanri.dev/pgbackrest-backup': value } } },
      { namespace: 'default', type: 'merge' },
    );
    return waitFor(
      `the PostgresBackup for ${value}`,
      async () => {
        const manual = (await status(SOURCE))?.pgbackrest?.manualBackup;
        const name = manual?.id === value ? manual.name : undefined;
        return name && (await backupNamed(name)) ? name : undefined;
      },
      60_000,
      500,
    );
  };
  const backupNamed = async (name: string) => (await backupsOf(env, SOURCE)).find((b) => b.metadata.name === name);
  const freshTable = (cluster: string) =>
    query(cluster, 'DROP TABLE IF EXISTS seq; CREATE TABLE seq (n bigint PRIMARY KEY)');

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, s3: true });
    s3 = await prepareS3(env);
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(SOURCE, 1, {
        config: { parameters: { archive_timeout: `${ARCHIVE_TIMEOUT_S}s` } },
        // gz rather than Kanri's lz4: the corruption test rewrites a stored file as a well-formed
        // stream of the wrong content, and Node compresses gzip, not lz4.
        backups: backupsSpec(s3, { global: { ...s3Global(s3), 'compress-type': 'gz' } }),
      } as never),
    );
    await waitReady(env.client, SOURCE, 1, 240_000);
    await waitFor(
      'WALArchiving True',
      async () => ((await condition(SOURCE, 'WALArchiving'))?.status === 'True' ? true : undefined),
      120_000,
      1_000,
    );
    // The clones restore a backup: one full backup to start from.
    const base = await requestBackup('base');
    await waitFor(
      'the base backup',
      async () => ((await backupNamed(base))?.status?.phase === 'Succeeded' ? true : undefined),
      300_000,
      1_000,
    );
  });
  // A test that failed mid-outage leaves neither S3 down nor its writer running for the next.
  beforeEach(async () => {
    await writer?.stop();
    writer = undefined;
    if (!s3.running) await s3.restart();
  });
  after(async () => {
    await writer?.stop();
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('an S3 outage: WALArchiving False within 30 s, a backup fails, archiving resumes without a gap', async () => {
    await freshTable(SOURCE);
    writer = new SequenceWriter(env.cp, SOURCE, await superuserPassword(env.client, SOURCE), PACED_WRITES);
    writer.start();
    await waitFor('writes', async () => ((writer?.acks.length ?? 0) > 50 ? true : undefined), 60_000, 200);
    await waitArchived(SOURCE, await switchWal(SOURCE));
    const beforeOutage = archivedSegments(await repoObjects(s3, BUCKET, await repoPathOf(env, SOURCE), 'archive/db/'));

    const stoppedAt = performance.now();
    await s3.stop();
    const backup = await requestBackup('during-outage');
    const failing = await waitFor(
      'WALArchiving False',
      async () => {
        const c = await condition(SOURCE, 'WALArchiving');
        return c?.status === 'False' ? c : undefined;
      },
      60_000,
      250,
    );
    const toFalseMs = performance.now() - stoppedAt;
    console.log(`# S3 stopped: WALArchiving False after ${seconds(toFalseMs)} (${failing.reason}: ${failing.message})`);
    assert.ok(toFalseMs <= 30_000, `WALArchiving turned False ${seconds(toFalseMs)} after the outage began`);
    assert.equal(failing.reason, 'ArchiveFailing');
    assert.match(failing.message ?? '', /ERROR: \[\d+\]/, 'the condition carries pgBackRest’s error');

    // The backup requested now ends Failed with a reason, while S3 is still down.
    const phases = new Set<string>();
    const failed = await waitFor(
      `backup ${backup} to end`,
      async () => {
        const b = await backupNamed(backup);
        phases.add(b?.status?.phase ?? 'Pending');
        if (b?.status?.phase === 'Succeeded') throw new Error('a backup succeeded without S3');
        return b?.status?.phase === 'Failed' ? b : undefined;
      },
      OUTAGE_MS - (performance.now() - stoppedAt) - 5_000,
      500,
    );
    const failedAfterMs = performance.now() - stoppedAt;
    console.log(
      `# backup during the outage: Failed after ${seconds(failedAfterMs)} (phases ${[...phases].join(' → ')}): ${failed.status?.message}`,
    );
    assert.ok(failed.status?.message, 'the failed backup says why');

    await sleep(Math.max(0, OUTAGE_MS - (performance.now() - stoppedAt)));
    const pending = (await status(SOURCE))?.archive?.pendingSegments ?? 0;
    const ackedDuringOutage = writer.acks.filter((a) => a.at > stoppedAt).length;
    assert.equal((await condition(SOURCE, 'WALArchiving'))?.status, 'False', 'still failing at the end of the outage');
    await s3.restart();
    const restartedAt = performance.now();
    await waitFor(
      'WALArchiving True again',
      async () => ((await condition(SOURCE, 'WALArchiving'))?.status === 'True' ? true : undefined),
      180_000,
      250,
    );
    const recoveredMs = performance.now() - restartedAt;
    const last = await switchWal(SOURCE);
    await waitArchived(SOURCE, last);
    const caughtUpMs = performance.now() - restartedAt;
    await writer.stop();
    writer = undefined;

    const after = archivedSegments(await repoObjects(s3, BUCKET, await repoPathOf(env, SOURCE), 'archive/db/'));
    const gaps = segmentGaps(after, last);
    console.log(
      `# outage ${seconds(OUTAGE_MS)}: ${ackedDuringOutage} commits acknowledged meanwhile, ${pending} segments waiting at its end; ` +
        `WALArchiving True ${seconds(recoveredMs)} after S3 came back, ${last} archived after ${seconds(caughtUpMs)}; ` +
        `segments in the repo ${after[0]}…${after.at(-1)} (${after.length}, ${after.length - beforeOutage.length} since the outage began), gaps: ${gaps.length}`,
    );
    assert.ok(ackedDuringOutage > 0, 'postgres kept committing while the archive was down');
    assert.ok(pending > 0, 'segments waited for the archive');
    assert.deepEqual(gaps, [], 'every segment up to the last switch is in the repo');
  });

  it('a corrupted backup file: the clone fails with pgBackRest’s reason and never comes up', async () => {
    const name = await requestBackup('to-corrupt');
    const done = await waitFor(
      'the backup to corrupt',
      async () => {
        const b = await backupNamed(name);
        if (b?.status?.phase === 'Failed') throw new Error(`backup failed: ${b.status.message}`);
        return b?.status?.phase === 'Succeeded' ? b : undefined;
      },
      300_000,
      1_000,
    );
    const label = done.status?.label ?? '';
    const files = await s3.listObjects(BUCKET, await repoPrefix(env, SOURCE, `backup/db/${label}/pg_data/`));
    const victim = [...files].sort((a, b) => b.size - a.size)[0];
    assert.ok(
      victim && victim.size > 8_192,
      `a data file of real size in ${label} (${victim?.key}, ${victim?.size} B)`,
    );
    const path = join(s3.dataDir, BUCKET, victim.key);
    const original = await readFile(path);
    // The file's content loses its second half; compressed, it is compressed again, so that
    // pgBackRest reads a well-formed file of the wrong size and checksum (not a broken stream).
    assert.ok(victim.key.endsWith('.gz'), `${victim.key} is gz-compressed, as global compress-type asks`);
    const cut = gunzipSync(original);
    const half = cut.subarray(0, Math.floor(cut.length / 2));
    await writeFile(path, gzipSync(half));
    const clone = 'ledger-corrupt';
    try {
      await clusters(env.client).create(
        clusterManifest(clone, 1, {
          dataSource: { postgresCluster: { clusterName: SOURCE, repoName: 'repo1', options: [`--set=${label}`] } },
        } as never),
      );
      const startedAt = performance.now();
      const report = await waitFor(
        'the clone’s restore to fail',
        async () => {
          const pod = (await instancePods(env.client, clone))[0] as Pod | undefined;
          const restore = readPodReport(pod)?.restore;
          if (restore?.result === 'succeeded') throw new Error('the clone restored a corrupted backup');
          return restore?.result === 'failed' ? restore : undefined;
        },
        300_000,
        1_000,
      );
      const event = await waitForClusterEvent(env.client, clone, { type: 'Warning', reason: 'RestoreFailed' });
      console.log(
        `# corrupted ${victim.key.split(`${label}/`)[1]} (${cut.length} B → ${half.length} B): restore failed after ${seconds(performance.now() - startedAt)}: ${report.reason}`,
      );
      assert.match(report.reason ?? '', /ERROR: \[\d+\]: .*checksum/, 'pgBackRest’s checksum error is the reason');
      assert.ok(
        report.reason?.includes(victim.key.split('/pg_data/')[1]?.replace(/\.gz$/, '') ?? '?'),
        'it names the file',
      );
      assert.match(event.note, /ERROR: \[\d+\]/);
      // It stays down: no Ready, and the reason in the status.
      await sleep(10_000);
      const ready = await condition(clone, 'Ready');
      console.log(`# clone status: Ready=${ready?.status}: ${ready?.message}`);
      assert.notEqual(ready?.status, 'True');
      assert.match(ready?.message ?? '', /restore clone failed/);
      const restore = readPodReport((await instancePods(env.client, clone))[0])?.restore;
      assert.equal(restore?.result, 'failed');
    } finally {
      await writeFile(path, original);
      await clusters(env.client)
        .delete(clone, { namespace: 'default' })
        .catch(() => undefined);
    }
  });

  it('total loss: a clone from the bare repo misses only the last archive_timeout of commits', async () => {
    await freshTable(SOURCE);
    await waitArchived(SOURCE, await switchWal(SOURCE));
    writer = new SequenceWriter(env.cp, SOURCE, await superuserPassword(env.client, SOURCE), PACED_WRITES);
    writer.start();
    // Longer than the default archive_timeout (60 s) would leave unarchived: the parameter decides.
    await sleep(45_000);
    const { pod } = await primaryIp(SOURCE);
    const node = nodeOf(env.cp, pod);
    await node.crash();
    // Nothing can acknowledge once crash() resolved: every ack is older than this.
    const lostAt = performance.now();
    await writer.stop();
    const acks = writer.acks;
    writer = undefined;
    // Everything goes: the cluster, its Pods (the node is down: forced) and its volumes. What is
    // left is its repo, at the path it was recorded at (written down, as a user would).
    const repoPath = await repoPathOf(env, SOURCE);
    await clusters(env.client).delete(SOURCE, { namespace: 'default' });
    for (const p of await instancePods(env.client, SOURCE))
      await env.client
        .resource('v1', 'Pod')
        .delete(p.metadata?.name ?? '', { namespace: 'default', gracePeriodSeconds: 0 })
        .catch(() => undefined);
    for (const c of await dataClaims(env.client, SOURCE))
      await env.client
        .resource('v1', 'PersistentVolumeClaim')
        .delete(c.metadata?.name ?? '', { namespace: 'default' })
        .catch(() => undefined);
    await waitFor(
      'the Pods and volumes gone',
      async () =>
        (await instancePods(env.client, SOURCE)).length + (await dataClaims(env.client, SOURCE)).length === 0
          ? true
          : undefined,
      120_000,
      1_000,
    );
    await node.recover();

    const reborn = 'ledger-reborn';
    await clusters(env.client).create(
      clusterManifest(reborn, 1, {
        dataSource: s3DataSource(s3, CREDS_SECRET, { 'repo1-path': repoPath }),
      } as never),
    );
    try {
      await waitReady(env.client, reborn, 1, 300_000);
    } catch (error) {
      const events = await clusterEvents(env.client, reborn);
      throw new Error(`${String(error)}; Events: ${events.map((e) => `${e.reason}: ${e.note}`).join(' | ')}`);
    }
    const restored = new Set((await query<{ n: string }>(reborn, 'SELECT n FROM seq')).map((r) => Number(r.n)));
    const missing = acks.filter((a) => !restored.has(a.n));
    const kept = acks.length - missing.length;
    const ages = missing.map((a) => lostAt - a.at);
    console.log(
      `# total loss after ${acks.length} acknowledged commits: ${kept} restored, ${missing.length} lost` +
        (missing.length
          ? `, aged ${seconds(ages.reduce((a, b) => Math.min(a, b)))} to ${seconds(ages.reduce((a, b) => Math.max(a, b)))} at the loss`
          : '') +
        ` (archive_timeout ${ARCHIVE_TIMEOUT_S} s)`,
    );
    assert.ok(kept > 0, 'the clone holds the archived commits');
    // Only a suffix is lost: no acknowledged commit older than a restored one is missing.
    // A loop, not Math.max(...): a spread of every acknowledged commit (100,000s on a fast run)
    // overflows the stack.
    const newestKept = acks.reduce((max, a) => (restored.has(a.n) && a.n > max ? a.n : max), Number.NEGATIVE_INFINITY);
    assert.deepEqual(
      missing.filter((a) => a.n < newestKept).map((a) => a.n),
      [],
      'no hole before the last restored commit',
    );
    // The segment holding a commit closes within archive_timeout and is then pushed (a second or
    // two here); a second archive_timeout of slack keeps the bound meaningful on a loaded machine.
    assert.ok(
      missing.every((a) => lostAt - a.at <= 2 * ARCHIVE_TIMEOUT_S * 1000),
      `lost commits are at most ${2 * ARCHIVE_TIMEOUT_S} s old (oldest ${seconds(ages.reduce((a, b) => Math.max(a, b), 0))})`,
    );
    assert.equal((await condition(reborn, 'Ready'))?.status, 'True');
  });
});
