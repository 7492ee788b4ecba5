/**
 * Issue 37, finding 1, at the agent: backup and restore options admitted before the allow-list
 * (an operator upgraded over objects its predecessor admitted, played here by installing the CRDs
 * without the options rules for the one write) never reach pgBackRest. Against the real control
 * plane, PostgreSQL 15, the pinned pgBackRest and a real S3 server:
 *
 * - a PostgresBackup asking pgBackRest to keep one full backup (`--repo1-retention-full=1`, which
 *   expires every older one) fails with the option named, the older backup stays in the
 *   repository, and the next backup runs;
 * - an in-place restore with `--recovery-option=archive_cleanup_command=…` (a shell command written
 *   into postgresql.auto.conf, copied to every replica) fails with the option named, and a restore
 *   with allowed options then runs, leaving no such setting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { type S3Server, waitFor } from '@kanri/testenv';
import { API_VERSION, BACKUP_ANNOTATION, BACKUP_KIND } from '../src/contract/index.js';
import { PostgresBackupResource, PostgresClusterResource } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import {
  type BackupObject,
  BUCKET,
  backupStatus,
  backupsSpec,
  prepareS3,
  repoPathOf,
  sqlOn,
} from './support/backup-fixtures.js';
import { repoObjects } from './support/backup-repo.js';

const CLUSTER = 'vault';
const SCHEMA = '/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties';

describe('backup and restore options admitted before the allow-list never reach pgBackRest', {
  timeout: 20 * 60_000,
}, () => {
  let env: PostgresEnv;
  let s3: S3Server;
  const crds = () => env.client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
  const backups = () => env.client.resource<BackupObject>(API_VERSION, BACKUP_KIND);

  /**
   * Writes `write` as an operator before the allow-list would have admitted it: the CRD without the
   * rules at `path` for that one write (waiting until the API server serves each schema), then the
   * CRD as it is again (ratcheting keeps the object as written).
   */
  async function admittedBefore(crd: { crd: unknown }, path: string, write: () => Promise<unknown>): Promise<void> {
    const name = (crd.crd as { metadata: { name: string } }).metadata.name;
    const rules = `${path}/x-kubernetes-validations`;
    await crds().patch(name, [{ op: 'remove', path: rules }], { type: 'json' });
    await waitFor(
      `${name} without the options rules`,
      async () =>
        write().then(
          () => true,
          () => undefined,
        ),
      30_000,
      500,
    );
    await crds().patch(name, [{ op: 'add', path: rules, value: pointer(crd.crd, `${rules}`) }], { type: 'json' });
  }

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, s3: true });
    s3 = await prepareS3(env);
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 1, {
        backups: backupsSpec(s3, { restore: { enabled: true, repoName: 'repo1' } }),
      } as never),
    );
    await waitReady(env.client, CLUSTER, 1, 240_000);
    await waitFor(
      'WALArchiving True',
      async () =>
        (await backupStatus(env, CLUSTER)).conditions?.find((c) => c.type === 'WALArchiving')?.status === 'True'
          ? true
          : undefined,
      120_000,
      1_000,
    );
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs())?.split('\n').slice(-150).join('\n'));
    await env?.stop();
  });

  const backup = (name: string, options?: string[]) =>
    backups().create({
      apiVersion: API_VERSION,
      kind: BACKUP_KIND,
      metadata: { name, namespace: 'default' },
      spec: { cluster: CLUSTER, repoName: 'repo1', type: 'full', ...(options ? { options } : {}) },
    } as unknown as BackupObject);
  const finished = (name: string) =>
    waitFor(
      `PostgresBackup ${name} to finish`,
      async () => {
        const b = await backups().get(name, { namespace: 'default' });
        return b.status?.phase === 'Succeeded' || b.status?.phase === 'Failed' ? b : undefined;
      },
      300_000,
      1_000,
    );

  it('fails a PostgresBackup that would expire every older backup, naming the option; the older backup stays and the next runs', async () => {
    const first = await finished((await backup('first')).metadata.name);
    assert.equal(first.status?.phase, 'Succeeded', first.status?.message);
    const label = first.status?.label ?? '';
    // The operator's recorded path (`/pgbackrest/default/vault-<uid>/repo1`), never a guessed one.
    const repoPath = await repoPathOf(env, CLUSTER);
    assert.ok(
      (await repoObjects(s3, BUCKET, repoPath, `backup/db/${label}`)).length > 0,
      'the first backup is in the repo',
    );

    await admittedBefore(PostgresBackupResource, `${SCHEMA}/options`, () =>
      backup('expire-all', ['--repo1-retention-full=1']),
    );
    const refused = await finished('expire-all');
    assert.equal(refused.status?.phase, 'Failed', refused.status?.message);
    assert.equal((refused.status as { reason?: string }).reason, 'OptionNotAllowed');
    assert.match(refused.status?.message ?? '', /^spec\.options: option --repo1-retention-full=1 is not allowed/);
    assert.ok(
      (await repoObjects(s3, BUCKET, repoPath, `backup/db/${label}`)).length > 0,
      `the first backup ${label} is still in the repo`,
    );

    const next = await finished((await backup('next', ['--annotation=after=refusal'])).metadata.name);
    assert.equal(next.status?.phase, 'Succeeded', next.status?.message);
    assert.equal(env.operatorExit(), undefined, 'the operator still runs');
  });

  it('fails an in-place restore that would write a shell command into postgresql.auto.conf, naming the option; an allowed restore then runs', async () => {
    const restoreWith = async (id: string) => {
      await clusters(env.client).patch(
        CLUSTER,
        { metadata: { annotations: { [BACKUP_ANNOTATION.restore]: id } } },
        { namespace: 'default', type: 'merge' },
      );
      return waitFor(
        `restore ${id} to finish`,
        async () => {
          const restore = (await backupStatus(env, CLUSTER)).pgbackrest?.restore;
          return restore?.id === id && restore.finished ? restore : undefined;
        },
        600_000,
        1_000,
      );
    };
    const setOptions = (options: string[]) =>
      clusters(env.client).patch(
        CLUSTER,
        { spec: { backups: { pgbackrest: { restore: { enabled: true, repoName: 'repo1', options } } } } },
        { namespace: 'default', type: 'merge' },
      );

    const injected = ['--type=default', '--recovery-option=archive_cleanup_command=echo injected'];
    await admittedBefore(
      PostgresClusterResource,
      `${SCHEMA}/backups/properties/pgbackrest/properties/restore/properties/options`,
      () => setOptions(injected),
    );
    const refused = await restoreWith('injected');
    assert.equal(refused.phase, 'Failed', refused.message);
    assert.match(
      refused.message ?? '',
      /option --recovery-option=archive_cleanup_command=echo injected is not allowed/,
    );

    await setOptions(['--type=default']);
    const restored = await restoreWith('allowed');
    assert.equal(restored.phase, 'Succeeded', restored.message);
    await waitReady(env.client, CLUSTER, 1, 240_000);
    const [setting] = await sqlOn<{ archive_cleanup_command: string }>(env, CLUSTER, 'SHOW archive_cleanup_command');
    assert.equal(setting?.archive_cleanup_command, '');
    assert.equal(env.operatorExit(), undefined, 'the operator still runs');
  });
});

/** The value at a JSON pointer into `object`. */
function pointer(object: unknown, path: string): unknown {
  return path
    .split('/')
    .slice(1)
    .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key.replace(/~1/g, '/').replace(/~0/g, '~')], object);
}
