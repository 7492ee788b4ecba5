/**
 * Issue 15, major upgrades, end to end on the real control plane with real PostgreSQL 14, 15 and
 * 16 builds, pgBackRest and the S3 server, under write load through `<name>-primary`:
 * - 14 → 15 with backups: the pre-flight `pg_upgrade --check` runs while the old server serves,
 *   the backup gate holds until a full backup succeeded, the data's checksum is equal afterwards,
 *   the replica is re-cloned, the first backup of the new cluster succeeds and WAL archiving goes
 *   on, and the downtime is reported; then 15 → 16 on the same cluster.
 * - PGO's PGUpgrade drives the same engine once the cluster's allow-upgrade annotation names it.
 * - Rollback: an image of 16 that lacks `pg_rewind` fails after `pg_upgrade` and before the new
 *   server's first start; setting `postgresVersion` back runs the old cluster again, with the
 *   same system identifier and timeline, and its data.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { postgresInstallations, waitFor } from '@kanri/testenv';
import { type PGUpgrade, PGUpgradeResource } from '../src/api/pg-upgrade.js';
import { ANNOTATION, API_VERSION, BACKUP_KIND, LABEL, PGO_ALLOW_UPGRADE } from '../src/contract/index.js';
import { clusterManifest, clusters, IMAGE, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { backupsOf, backupsSpec, prepareS3, sqlOn, switchWal, waitArchived } from './support/backup-fixtures.js';
import { clusterEvents } from './support/cluster-observers.js';
import { podsOf, reportOf, SequenceWriter, sql, superuserPassword } from './support/failover-env.js';

const CHECKSUM =
  "SELECT md5(string_agg(n::text || ':' || note, ',' ORDER BY n)) AS sum, count(*)::int AS rows FROM ledger";

describe('major upgrades', { timeout: 30 * 60_000 }, () => {
  let env: PostgresEnv;
  let broken: string;

  before(async () => {
    // An installation of 16 without pg_rewind: pg_upgrade works, an instance could not.
    const bin16 = (await postgresInstallations('postgres'))['16'] ?? '';
    broken = mkdtempSync(join(tmpdir(), 'kanri-pg16-no-rewind-'));
    chmodSync(broken, 0o755); // the instances run as postgres
    for (const program of readdirSync(bin16))
      if (program !== 'pg_rewind') symlinkSync(join(bin16, program), join(broken, program));
    env = await startPostgresEnv({ processNodes: 2, s3: true, extraTags: { '16-no-rewind': broken } });
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
    rmSync(broken, { recursive: true, force: true });
  });

  const get = (name: string) => clusters(env.client).get(name, { namespace: 'default' });
  /** Waits for status.majorUpgrade to reach `phase` (of the upgrade to `to`, when given). */
  const phaseOf = (name: string, phase: string, what: string, timeoutMs = 5 * 60_000, to?: number) =>
    waitFor(
      what,
      async () => {
        const c = await get(name);
        const upgrade = c.status?.majorUpgrade;
        return upgrade?.phase === phase && (to === undefined || upgrade.to === to) ? c : undefined;
      },
      timeoutMs,
      500,
    );
  const upgradeTo = (name: string, to: number, extra: Record<string, unknown> = {}) =>
    clusters(env.client).patch(
      name,
      {
        metadata: { annotations: { [ANNOTATION.allowMajorUpgrade]: String(to) } },
        spec: { postgresVersion: to, ...extra },
      },
      { namespace: 'default', type: 'merge' },
    );
  const versions = async (name: string, password: string) => {
    const out: Record<string, string> = {};
    for (const pod of await podsOf(env.client, name)) {
      const [row] = await sql<{ v: string }>(
        pod.status?.podIP ?? '',
        password,
        "SELECT current_setting('server_version') AS v",
      );
      out[pod.metadata?.name ?? ''] = row?.v ?? '';
    }
    return out;
  };
  const claimUids = async (name: string) =>
    new Map(
      (
        await env.client
          .resource<{ metadata: { name: string; uid: string } }>('v1', 'PersistentVolumeClaim')
          .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${name}` })
      ).items.map((c) => [c.metadata.name, c.metadata.uid]),
    );

  it('14 → 15 with backups: pre-flight while serving, the backup gate, equal checksums, re-cloned replica, backups go on; then 15 → 16', async () => {
    const name = 'vault';
    const s3 = await prepareS3(env);
    await clusters(env.client).create(
      clusterManifest(name, 2, { postgresVersion: 14, backups: backupsSpec(s3) } as never),
    );
    await waitReady(env.client, name, 2, 240_000);
    const password = await superuserPassword(env.client, name);
    await sqlOn(env, name, 'CREATE TABLE ledger (n int PRIMARY KEY, note text)');
    await sqlOn(env, name, 'INSERT INTO ledger SELECT g, md5(g::text) FROM generate_series(1, 20000) g');
    await sqlOn(env, name, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
    const [sum14] = await sqlOn<{ sum: string; rows: number }>(env, name, CHECKSUM);
    const oldClaims = await claimUids(name);
    const before = await get(name);
    const primary = before.status?.primary ?? '';
    const primaryStart = await sqlOn<{ t: string }>(env, name, 'SELECT pg_postmaster_start_time()::text AS t');

    const writer = new SequenceWriter(env.cp, name, password);
    writer.start();
    await upgradeTo(name, 15);
    // No full backup yet: the pre-flight passes, and the gate holds with everything still running.
    const gated = await phaseOf(name, 'WaitingForBackup', 'the backup gate');
    assert.match(gated.status?.majorUpgrade?.message ?? '', /no full backup succeeded in the last 24 h/);
    const check = reportOf((await podsOf(env.client, name)).find((p) => p.metadata?.name === primary))?.upgradeCheck;
    assert.deepEqual([check?.to, check?.ok], [15, true], JSON.stringify(check));
    assert.deepEqual(
      await sqlOn<{ t: string }>(env, name, 'SELECT pg_postmaster_start_time()::text AS t'),
      primaryStart,
      'the pre-flight ran against the running old server, which kept running',
    );
    await env.client.resource(API_VERSION, BACKUP_KIND).create({
      apiVersion: API_VERSION,
      kind: BACKUP_KIND,
      metadata: { name: `${name}-before-15`, namespace: 'default' },
      spec: { cluster: name, repoName: 'repo1', type: 'full' },
    });
    const done = await phaseOf(name, 'Succeeded', 'the upgrade to 15', 8 * 60_000, 15);
    await writer.stop();
    const status = done.status?.majorUpgrade;
    console.log(
      `# 14 → 15: downtime ${status?.downtimeSeconds} s, pg_upgrade ${status?.pgUpgradeSeconds} s; ${status?.message}`,
    );
    assert.ok((status?.downtimeSeconds ?? 0) > 0, 'the downtime is reported');
    assert.ok(Date.parse(check?.at ?? '') < Date.parse(status?.startedAt ?? ''), 'the check ran before the downtime');
    assert.equal(status?.instance, primary, "the last primary's data was upgraded");
    const [sum15] = await sqlOn<{ sum: string; rows: number }>(env, name, CHECKSUM);
    assert.deepEqual(sum15, sum14, 'the data is the same');
    for (const [pod, v] of Object.entries(await versions(name, password))) assert.match(v, /^15\./, pod);
    const newClaims = await claimUids(name);
    for (const [claim, uid] of oldClaims) {
      if (claim.startsWith(primary)) assert.equal(newClaims.get(claim), uid, 'the primary kept its volume');
      else assert.notEqual(newClaims.get(claim), uid, `${claim} was re-created: the replica re-cloned`);
    }
    const stored = new Set((await sqlOn<{ n: string }>(env, name, 'SELECT n FROM seq')).map((r) => Number(r.n)));
    const lost = writer.acks.filter((a) => !stored.has(a.n));
    assert.deepEqual(lost, [], 'no acknowledged commit is lost');
    assert.ok(writer.acks.length > 0, 'the writer wrote');
    // Backups go on: the stanza follows the new cluster, its first full backup succeeds, WAL archives.
    await waitFor(
      'the full backup of the upgraded cluster',
      async () =>
        (await backupsOf(env, name)).find((b) => b.spec.trigger === 'upgrade' && b.status?.phase === 'Succeeded'),
      4 * 60_000,
      1_000,
    );
    await waitArchived(env, name, await switchWal(env, name));
    const reasons = (await clusterEvents(env.client, name)).map((e) => e.reason);
    for (const reason of ['MajorUpgradeStarted', 'MajorUpgradeServing', 'MajorUpgradeSucceeded'])
      assert.ok(reasons.includes(reason), `${reason} in ${reasons.join(', ')}`);

    await upgradeTo(name, 16);
    const second = await phaseOf(name, 'Succeeded', 'the upgrade to 16', 8 * 60_000, 16);
    console.log(`# 15 → 16: downtime ${second.status?.majorUpgrade?.downtimeSeconds} s`);
    const [sum16] = await sqlOn<{ sum: string; rows: number }>(env, name, CHECKSUM);
    assert.deepEqual(sum16, sum14);
    for (const [pod, v] of Object.entries(await versions(name, password))) assert.match(v, /^16\./, pod);
  });

  it("PGO's PGUpgrade: waits for the cluster's allow-upgrade annotation, then drives the same upgrade to Succeeded; an upgrade to a lower major is refused at admission", async () => {
    const name = 'pgo';
    await clusters(env.client).create(clusterManifest(name, 1));
    await waitReady(env.client, name, 1, 240_000);
    const upgrades = env.client.resource<PGUpgrade & KubeObject>(PGUpgradeResource.apiVersion, PGUpgradeResource.kind);
    const manifest = (upgrade: string, from: number, to: number) => ({
      apiVersion: PGUpgradeResource.apiVersion,
      kind: PGUpgradeResource.kind,
      metadata: { name: upgrade, namespace: 'default' },
      spec: { postgresClusterName: name, fromPostgresVersion: from, toPostgresVersion: to },
    });
    await assert.rejects(
      upgrades.create(manifest('down', 16, 15) as never),
      /toPostgresVersion must be greater than fromPostgresVersion/,
    );
    await upgrades.create(manifest('up16', 15, 16) as never);
    const condition = (type: string) => async () =>
      (await upgrades.get('up16', { namespace: 'default' })).status?.conditions?.find((c) => c.type === type);
    const missing = await waitFor('the PGUpgrade to want the annotation', async () => {
      const c = await condition('Progressing')();
      return c?.reason === 'PGClusterMissingRequiredAnnotation' ? c : undefined;
    });
    assert.equal(missing.message, `PostgresCluster ${name} lacks annotation for upgrade up16`);
    assert.equal((await get(name)).spec.postgresVersion, 15, 'nothing asked of the cluster yet');
    // PGO's own annotation key, as a PGO manifest carries it.
    await clusters(env.client).patch(
      name,
      { metadata: { annotations: { [PGO_ALLOW_UPGRADE]: 'up16' } } },
      { namespace: 'default', type: 'merge' },
    );
    const succeeded = await waitFor(
      'the PGUpgrade to succeed',
      async () => {
        const c = await condition('Succeeded')();
        return c?.status === 'True' ? c : undefined;
      },
      5 * 60_000,
      1_000,
    );
    assert.equal(succeeded.reason, 'PGUpgradeSucceeded');
    assert.equal((await condition('Progressing')())?.reason, 'PGUpgradeCompleted');
    const password = await superuserPassword(env.client, name);
    for (const [pod, v] of Object.entries(await versions(name, password))) assert.match(v, /^16\./, pod);
  });

  it('an image without pg_rewind fails after pg_upgrade, before the new server starts; setting the version back runs the old cluster, same identity', async () => {
    const name = 'undo';
    await clusters(env.client).create(clusterManifest(name, 2));
    await waitReady(env.client, name, 2, 240_000);
    const password = await superuserPassword(env.client, name);
    await sqlOn(env, name, 'CREATE TABLE ledger (n int PRIMARY KEY, note text)');
    await sqlOn(env, name, 'INSERT INTO ledger SELECT g, md5(g::text) FROM generate_series(1, 5000) g');
    const [sum] = await sqlOn<{ sum: string; rows: number }>(env, name, CHECKSUM);
    const identity = async () =>
      (
        await sqlOn<{ id: string; tli: number }>(
          env,
          name,
          'SELECT system_identifier::text AS id, (SELECT timeline_id FROM pg_control_checkpoint()) AS tli FROM pg_control_system()',
        )
      )[0];
    const before = await identity();

    await upgradeTo(name, 16, { image: `${IMAGE}:16-no-rewind` });
    const failed = await phaseOf(name, 'Failed', 'the upgrade to fail');
    assert.match(failed.status?.majorUpgrade?.message ?? '', /lacks pg_rewind/);
    assert.match(failed.status?.majorUpgrade?.message ?? '', /old data is intact/);
    assert.deepEqual(
      (await clusterEvents(env.client, name)).filter((e) => e.reason === 'MajorUpgradeFailed').length > 0,
      true,
    );

    await clusters(env.client).patch(
      name,
      { spec: { postgresVersion: 15, image: null } },
      { namespace: 'default', type: 'merge' },
    );
    await phaseOf(name, 'RolledBack', 'the rollback');
    await waitReady(env.client, name, 2, 240_000);
    assert.deepEqual(await identity(), before, 'same system identifier and timeline');
    const [after] = await sqlOn<{ sum: string; rows: number }>(env, name, CHECKSUM);
    assert.deepEqual(after, sum);
    for (const [pod, v] of Object.entries(await versions(name, password))) assert.match(v, /^15\./, pod);
  });
});
