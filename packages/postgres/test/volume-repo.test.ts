/**
 * A volume repository end to end, operator and agents together on real PostgreSQL and pgBackRest:
 * the repo host the operator starts serves the repo over TLS with the certificates it issued, the
 * primary archives WAL through it (WALArchiving turns True), and a backup requested by annotation
 * runs on the repo host against the primary and succeeds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import { names } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, volume, waitReady } from './harness.js';
import { backupStatus, backupsOf } from './support/backup-fixtures.js';

const CLUSTER = 'cellar';

describe('a volume repository through the repo host', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, pgbackrest: true });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 1, {
        backups: {
          pgbackrest: {
            repos: [{ name: 'repo1', volume: { volumeClaimSpec: volume } }],
            manual: { repoName: 'repo1', options: ['--type=full'] },
          },
        },
      }),
    );
    await waitReady(env.client, CLUSTER, 1);
  });
  after(async () => {
    await env?.stop();
  });

  it('archives WAL through the repo host', async () => {
    const condition = await waitFor(
      'WALArchiving to be True',
      async () => {
        const c = (await backupStatus(env, CLUSTER)).conditions?.find((x) => x.type === 'WALArchiving');
        if (c?.status !== 'True') throw new Error(`WALArchiving: ${JSON.stringify(c)}`);
        return c;
      },
      240_000,
      500,
    );
    assert.equal(condition.status, 'True');
    const pods = await env.client.resource('v1', 'Pod').list({ namespace: 'default' });
    assert.ok(pods.items.some((p) => p.metadata?.name === names.repoHost(CLUSTER)));
  });

  it('takes a backup into the volume repo on request', async () => {
    await clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { 'postgres.kanri.dev/pgbackrest-backup': 'first' } } },
      { namespace: 'default', type: 'merge' },
    );
    const backup = await waitFor(
      'the backup to succeed',
      async () => {
        const [b] = await backupsOf(env, CLUSTER);
        if (b?.status?.phase === 'Failed') return b;
        if (b?.status?.phase !== 'Succeeded') throw new Error(`backup: ${JSON.stringify(b?.status)}`);
        return b;
      },
      300_000,
      500,
    );
    assert.equal(backup.status?.phase, 'Succeeded', backup.status?.message);
    assert.equal(backup.spec.repoName, 'repo1');
    assert.match(backup.status?.label ?? '', /F$/);
  });
});
