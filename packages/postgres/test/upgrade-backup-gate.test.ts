/**
 * Issue 37, finding 7: a forged Succeeded status does not open the major upgrade's backup gate.
 * The gate opens only where a PostgresBackup and pgBackRest's own `info` (reported by the primary)
 * agree on the repo and label of a full backup that pgBackRest says ended in the last 24 h
 * (operator/upgrade/backup-gate.ts). Before, a status saying Succeeded was enough, and any agent
 * of the namespace (or anyone who may write that status) could write one.
 *
 * The forged record is made before the cluster exists, so that no agent can run it first.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import { ANNOTATION, API_VERSION, BACKUP_KIND } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { backupsSpec, prepareS3 } from './support/backup-fixtures.js';

const NAME = 'gate';
const FORGED_LABEL = '20261206-000000F';

describe('the major upgrade backup gate', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, s3: true });
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  const upgrade = async () => (await clusters(env.client).get(NAME, { namespace: 'default' })).status?.majorUpgrade;
  const backups = () => env.client.resource(API_VERSION, BACKUP_KIND);

  it('holds on a forged Succeeded full backup that pgBackRest does not list, and opens on a real one', async () => {
    const s3 = await prepareS3(env);
    await backups().create({
      apiVersion: API_VERSION,
      kind: BACKUP_KIND,
      metadata: { name: `${NAME}-forged`, namespace: 'default' },
      spec: { cluster: NAME, repoName: 'repo1', type: 'full' },
    });
    await backups().patchStatus(
      `${NAME}-forged`,
      {
        status: {
          phase: 'Succeeded',
          reason: 'BackupSucceeded',
          label: FORGED_LABEL,
          completedAt: new Date().toISOString(),
          message: `full backup ${FORGED_LABEL} in repo1`,
        },
      },
      { namespace: 'default', type: 'merge' },
    );
    await clusters(env.client).create(clusterManifest(NAME, 1, { backups: backupsSpec(s3) } as never));
    await waitReady(env.client, NAME, 1, 240_000);
    await clusters(env.client).patch(
      NAME,
      { metadata: { annotations: { [ANNOTATION.allowMajorUpgrade]: '16' } }, spec: { postgresVersion: 16 } },
      { namespace: 'default', type: 'merge' },
    );
    const past = await waitFor(
      'the upgrade to pass its pre-flight check',
      async () => {
        const phase = (await upgrade())?.phase;
        return phase && phase !== 'Checking' ? phase : undefined;
      },
      5 * 60_000,
      250,
    );
    assert.equal(past, 'WaitingForBackup', 'the forged status did not open the gate');
    const explained = await waitFor(
      "the gate to say pgBackRest's info does not list the forged backup",
      async () => {
        const status = await upgrade();
        return status?.message?.includes('does not list') ? status : undefined;
      },
      2 * 60_000,
      500,
    );
    assert.equal(explained.phase, 'WaitingForBackup');
    assert.match(
      explained.message ?? '',
      new RegExp(
        `PostgresBackup ${NAME}-forged says full backup ${FORGED_LABEL} in repo1, which pgBackRest's info on the primary does not list`,
      ),
    );
    // Reconciles come and go (every PostgresBackup change, every 30 s at the latest): still held.
    await sleep(35_000);
    assert.equal((await upgrade())?.phase, 'WaitingForBackup');

    await backups().create({
      apiVersion: API_VERSION,
      kind: BACKUP_KIND,
      metadata: { name: `${NAME}-real`, namespace: 'default' },
      spec: { cluster: NAME, repoName: 'repo1', type: 'full' },
    });
    const opened = await waitFor(
      'a real full backup to open the gate',
      async () => {
        const status = await upgrade();
        return status && !['Checking', 'WaitingForBackup'].includes(status.phase) ? status : undefined;
      },
      5 * 60_000,
      500,
    );
    assert.ok(['Stopping', 'Upgrading', 'Recloning', 'Succeeded'].includes(opened.phase), JSON.stringify(opened));
  });
});
