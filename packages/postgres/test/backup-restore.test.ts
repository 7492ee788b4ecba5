/**
 * Scheduled backups, in-place point-in-time restore (a failed one first, then a new annotation
 * value that succeeds), and who may write into the repo after a change of primary, end to end on
 * the real control plane, PostgreSQL 15, pgBackRest and the S3 server.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import { ANNOTATION } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import {
  BUCKET,
  backupsOf,
  backupsSpec,
  markers,
  prepareS3,
  repoPrefix,
  restoreInPlace,
  switchWal,
  targetTime,
  waitArchived,
  writeMarkers,
} from './support/backup-fixtures.js';

const CLUSTER = 'ledger';

/** GET /archive-permit on an agent's local control socket. */
function permit(socketPath: string): Promise<{ action: string; reason?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/archive-permit', timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('scheduled backups, in-place PITR and the archive after a change of primary', { timeout: 25 * 60_000 }, () => {
  let env: PostgresEnv;
  let s3: NonNullable<PostgresEnv['cp']['s3']>;
  const patchSpec = (pgbackrest: Record<string, unknown>) =>
    clusters(env.client).patch(CLUSTER, { spec: { backups: { pgbackrest } } }, { namespace: 'default', type: 'merge' });
  const annotate = (key: string, value: string) =>
    clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { [key]: value } } },
      { namespace: 'default', type: 'merge' },
    );

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, s3: true });
    s3 = await prepareS3(env);
    await env.startOperator();
    const spec = backupsSpec(s3);
    spec.pgbackrest.repos = [
      { ...spec.pgbackrest.repos[0], schedules: { full: '*/2 * * * *', incremental: '* * * * *' } } as never,
    ];
    await clusters(env.client).create(clusterManifest(CLUSTER, 2, { backups: spec } as never));
    await waitReady(env.client, CLUSTER, 2, 240_000);
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('runs scheduled full and incremental backups with the right types, never two at once', async () => {
    const scheduled = await waitFor(
      'a scheduled full and a later scheduled incremental backup',
      async () => {
        const done = (await backupsOf(env, CLUSTER)).filter(
          (b) => b.spec.trigger === 'schedule' && b.status?.phase === 'Succeeded',
        );
        const full = done.find((b) => b.spec.type === 'full');
        const incr = done.find(
          (b) => b.spec.type === 'incr' && full && (b.status?.startedAt ?? '') > (full.status?.completedAt ?? ''),
        );
        return full && incr ? done : undefined;
      },
      300_000,
      2_000,
    );
    // pgBackRest's label says what it made: F for full, I for an incremental on top of a full.
    for (const b of scheduled) {
      const expected = b.spec.type === 'full' ? /^\d{8}-\d{6}F$/ : /^\d{8}-\d{6}F(_\d{8}-\d{6}I)?$/;
      assert.match(b.status?.label ?? '', expected, `${b.metadata.name} (${b.spec.type})`);
    }
    assert.ok(
      scheduled.some((b) => b.spec.type === 'incr' && /I$/.test(b.status?.label ?? '')),
      'a real incremental',
    );
    const runs = (await backupsOf(env, CLUSTER))
      .filter((b) => b.status?.startedAt && b.status.completedAt)
      .map((b) => [Date.parse(b.status?.startedAt ?? ''), Date.parse(b.status?.completedAt ?? '')] as const)
      .sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < runs.length; i++) {
      assert.ok((runs[i]?.[0] ?? 0) >= (runs[i - 1]?.[1] ?? 0), `backup ${i} started after backup ${i - 1} ended`);
    }
    // No schedules from here on: the restores below should not race a backup.
    await patchSpec({
      repos: [{ name: 'repo1', s3: { bucket: BUCKET, endpoint: 'localhost', region: s3.region }, schedules: null }],
    });
  });

  it('restores in place: an impossible target fails with a reason, a new value restores exactly to T', async () => {
    const t = await writeMarkers(env, CLUSTER, 30, 15);
    const wal = await switchWal(env, CLUSTER);
    await waitArchived(env, CLUSTER, wal);

    // An hour ahead: pgBackRest finds a backup before it, but the archive cannot reach it.
    const failed = await restoreInPlace(env, CLUSTER, 'impossible', targetTime(new Date(Date.now() + 3_600_000)));
    assert.equal(failed.phase, 'Failed');
    assert.equal(failed.failed, 1);
    assert.match(failed.message ?? '', /recovery ended before configured recovery target was reached/);

    const done = await restoreInPlace(env, CLUSTER, 'to-t', targetTime(t));
    assert.equal(done.phase, 'Succeeded', done.message);
    assert.equal(done.succeeded, 1);
    // The replicas re-clone the restored primary and stream again.
    await waitReady(env.client, CLUSTER, 2, 300_000);
    assert.deepEqual(
      await markers(env, CLUSTER),
      Array.from({ length: 15 }, (_, i) => i + 1),
    );
    const status = await clusters(env.client).get(CLUSTER, { namespace: 'default' });
    const timelines = (status.status?.instances ?? []).map((i) => i.timeline ?? 0);
    assert.ok(
      timelines.every((tl) => tl >= 2),
      `every instance on a new timeline: ${timelines}`,
    );
  });

  it('after a switchover the former primary is refused a permit, and the new primary archives its timeline', async () => {
    const before = await clusters(env.client).get(CLUSTER, { namespace: 'default' });
    const oldPrimary = before.status?.primary ?? '';
    await annotate(ANNOTATION.switchover, '*');
    const after = await waitFor(
      'a new primary',
      async () => {
        const c = await clusters(env.client).get(CLUSTER, { namespace: 'default' });
        return c.status?.primary && c.status.primary !== oldPrimary ? c : undefined;
      },
      120_000,
      500,
    );
    const newTimeline = (after.status?.instances ?? []).find((i) => i.name === after.status?.primary)?.timeline ?? 0;
    // The former primary's agent: its socket, from its start line.
    const logs = await env.allLogs();
    const started = logs
      .split('\n')
      .filter((line) => line.includes(`"pod":"${oldPrimary}"`) && line.includes('"msg":"agent started"'))
      .pop();
    const socketDir = started ? (JSON.parse(started) as { socketDir: string }).socketDir : '';
    assert.ok(socketDir, `the agent of ${oldPrimary} logged its socket directory`);
    const answer = await waitFor(
      `${oldPrimary} to be refused`,
      async () => {
        const p = await permit(join(socketDir, '.s.kanri'));
        return p.action === 'refuse' ? p : undefined;
      },
      60_000,
      500,
    );
    assert.match(answer.reason ?? '', /does not lead/);

    // status.primary moves before the primary Service does: until it follows, the Service may
    // still lead to the former primary, now in recovery, which refuses a WAL switch.
    await waitFor('a WAL switch through the primary Service', () => switchWal(env, CLUSTER), 60_000, 500);
    const history = `${newTimeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
    await waitFor(
      `${history} and a segment of timeline ${newTimeline} in the repo`,
      async () => {
        const keys = ((await s3.listObjects(BUCKET, await repoPrefix(env, CLUSTER, 'archive/db/'))) ?? []).map(
          (o) => o.key,
        );
        const segment = keys.some(
          (k) => k.split('/').pop()?.startsWith(history.slice(0, 8)) && !k.endsWith('.history'),
        );
        return keys.some((k) => k.endsWith(history)) && segment ? true : undefined;
      },
      120_000,
      1_000,
    );
  });
});
