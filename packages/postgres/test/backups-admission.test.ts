import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { InvalidError, type KubeClient } from '@kanri/client';
import { parse } from 'yaml';
import {
  FORBIDDEN_RESTORE_OPTIONS,
  forbiddenOption,
  operatorOwnsGlobalOption,
  type PostgresBackup,
  PostgresBackupResource,
  type PostgresCluster,
  PostgresClusterResource,
} from '../src/index.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';

const readme = new URL('../../../../README.md', import.meta.url);

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
const s3 = { bucket: 'b', endpoint: 's3.eu-west-1.amazonaws.com', region: 'eu-west-1' };

/** A valid cluster spec whose pgbackrest section is `pgbackrest` (repo1 on S3 unless it says otherwise). */
const withBackups = (pgbackrest: Record<string, unknown>) => ({
  postgresVersion: 16,
  instances: [{ dataVolumeClaimSpec: volume }],
  backups: { pgbackrest: { repos: [{ name: 'repo1', s3 }], ...pgbackrest } },
});

describe('backups API admission against a real API server', () => {
  let env: AdmissionEnv;
  let client: KubeClient;
  before(async () => {
    env = await startAdmissionEnv([PostgresClusterResource, PostgresBackupResource]);
    client = env.client;
  });
  after(async () => {
    await env?.stop();
  });

  const clusters = () => client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
  const backups = () => client.resource<PostgresBackup>(PostgresBackupResource.apiVersion, 'PostgresBackup');
  const invalid = (error: unknown) => {
    assert.ok(error instanceof InvalidError, `rejected as invalid: ${error}`);
    return error.message;
  };
  const accepted = (spec: unknown) =>
    clusters().create({ metadata: { name: 'ok', namespace: 'default' }, spec } as PostgresCluster, { dryRun: true });
  const rejection = async (spec: unknown) =>
    invalid(
      await clusters()
        .create({ metadata: { name: 'bad', namespace: 'default' }, spec } as PostgresCluster, { dryRun: true })
        .catch((e: unknown) => e),
    );

  it('accepts every kind of repository, schedules, manual, restore and global options, and defaults enabled', async () => {
    const created = await accepted(
      withBackups({
        configuration: [{ secret: { name: 'creds', items: [{ key: 's3.conf', path: 's3.conf' }] } }],
        global: { 'repo1-retention-full': '14', 'repo2-path': '/pgbackrest/x', 'compress-type': 'zst' },
        repos: [
          { name: 'repo1', s3, schedules: { full: '0 1 * * 0', differential: '0 1 * * 1-6', incremental: '@hourly' } },
          { name: 'repo2', volume: { volumeClaimSpec: volume } },
          { name: 'repo3', gcs: { bucket: 'g' } },
          { name: 'repo4', azure: { container: 'c' } },
        ],
        manual: { repoName: 'repo2', options: ['--type=full'] },
        restore: { repoName: 'repo1', options: ['--type=time', '--target=2026-01-02 03:04:05+00'] },
      }),
    );
    assert.deepEqual(
      created.spec.backups?.pgbackrest.repos.map((r) => r.name),
      ['repo1', 'repo2', 'repo3', 'repo4'],
    );
    assert.equal(created.spec.backups?.pgbackrest.restore?.enabled, false);
    assert.deepEqual(created.spec.backups?.pgbackrest.repos[2]?.gcs, { bucket: 'g' });
    assert.deepEqual(created.spec.backups?.pgbackrest.repos[3]?.azure, { container: 'c' });
  });

  it("accepts PGO's starter example (a volume repo and PGO's pgBackRest image) with only apiVersion changed", async () => {
    const created = await accepted({
      image: 'registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi9-16.9-2520',
      postgresVersion: 16,
      instances: [{ name: 'instance1', dataVolumeClaimSpec: volume }],
      backups: {
        pgbackrest: {
          image: 'registry.developers.crunchydata.com/crunchydata/crunchy-pgbackrest:ubi9-2.54.2-2520',
          repos: [{ name: 'repo1', volume: { volumeClaimSpec: volume } }],
        },
      },
    });
    assert.deepEqual(created.spec.backups?.pgbackrest.repos[0]?.volume?.volumeClaimSpec.resources, volume.resources);
  });

  it("accepts the top README's PostgresCluster example, backups and dataSource included", async () => {
    const text = await readFile(readme, 'utf8');
    const start = text.indexOf('apiVersion: postgres.kanri.dev/v1', text.indexOf('## `@kanri/postgres`'));
    const example = parse(text.slice(start, text.indexOf('```', start))) as PostgresCluster;
    const created = await clusters().create(
      { ...example, metadata: { name: 'readme', namespace: 'default' } },
      { dryRun: true },
    );
    assert.equal(created.spec.backups?.pgbackrest.repos[0]?.s3?.bucket, 'my-backups');
    assert.equal(created.spec.dataSource?.postgresCluster?.repoName, 'repo1');
  });

  it('refuses a repository named repo5, naming the field', async () => {
    const message = await rejection(withBackups({ repos: [{ name: 'repo5', s3 }] }));
    assert.match(message, /spec\.backups\.pgbackrest\.repos\[0\]\.name/);
  });

  it('refuses a repository with two storages, or with none, naming the repository', async () => {
    const two = await rejection(withBackups({ repos: [{ name: 'repo1', s3, volume: { volumeClaimSpec: volume } }] }));
    assert.match(two, /spec\.backups\.pgbackrest\.repos\[0\]: .*exactly one of s3, gcs, azure or volume/);
    const none = await rejection(withBackups({ repos: [{ name: 'repo1' }] }));
    assert.match(none, /spec\.backups\.pgbackrest\.repos\[0\]: .*exactly one of s3, gcs, azure or volume/);
  });

  it('refuses duplicate repository names, naming the duplicate', async () => {
    const message = await rejection(
      withBackups({
        repos: [
          { name: 'repo1', s3 },
          { name: 'repo1', gcs: { bucket: 'g' } },
        ],
      }),
    );
    assert.match(message, /spec\.backups\.pgbackrest\.repos\[1\]: Duplicate value/);
  });

  it('refuses restore options the operator sets, naming the field', async () => {
    for (const option of ['--stanza=x', '--target-action=pause', '--repo=2', '--pg1-path /x']) {
      const message = await rejection(
        withBackups({ restore: { enabled: true, repoName: 'repo1', options: [option] } }),
      );
      assert.match(message, /spec\.backups\.pgbackrest\.restore\.options: .*options must not set --stanza/, option);
    }
  });

  it('refuses manual and restore repoNames that name no declared repository', async () => {
    const manual = await rejection(withBackups({ manual: { repoName: 'repo2' } }));
    assert.match(manual, /spec\.backups\.pgbackrest\.manual\.repoName: .*must name a repository declared in repos/);
    const restore = await rejection(withBackups({ restore: { enabled: true, repoName: 'repo3' } }));
    assert.match(restore, /spec\.backups\.pgbackrest\.restore\.repoName: .*must name a repository declared in repos/);
  });

  it('refuses a schedule that is not cron, naming the field', async () => {
    const message = await rejection(withBackups({ repos: [{ name: 'repo1', s3, schedules: { full: '0 1 * *' } }] }));
    assert.match(message, /spec\.backups\.pgbackrest\.repos\[0\]\.schedules\.full/);
  });

  it('refuses global options the operator owns, and options of undeclared repositories', async () => {
    for (const key of ['pg1-path', 'pg1-host-user', 'stanza', 'config-include-path', 'archive-async']) {
      const message = await rejection(withBackups({ global: { [key]: 'x' } }));
      assert.match(message, /spec\.backups\.pgbackrest\.global: .*set by the operator/, key);
    }
    const undeclared = await rejection(withBackups({ global: { 'repo2-path': '/x' } }));
    assert.match(undeclared, /spec\.backups\.pgbackrest\.global: .*must name a declared repository/);
  });

  it('gives the same answers as the pure checks the operator uses', async () => {
    const refused = (spec: unknown) =>
      clusters()
        .create({ metadata: { name: 'same', namespace: 'default' }, spec } as PostgresCluster, { dryRun: true })
        .then(
          () => false,
          (e: unknown) => invalid(e) !== '',
        );
    const repos = [
      { name: 'repo1', s3 },
      { name: 'repo3', gcs: { bucket: 'g' } },
    ];
    for (const key of [
      'pg1-port',
      'pg1-hostx',
      'configx',
      'repo1-path',
      'repo2-path',
      'repo3-x',
      'repo31-x',
      'pg2-path',
    ]) {
      const expected = operatorOwnsGlobalOption(key, ['repo1', 'repo3']);
      assert.equal(await refused(withBackups({ repos, global: { [key]: 'x' } })), expected, key);
    }
    for (const option of [
      '--repo',
      '--repo 1',
      '--repo1-path=/x',
      '--stanza',
      '--link-map=a=b',
      '--link-all',
      '--set=x',
    ]) {
      const expected = forbiddenOption([option], FORBIDDEN_RESTORE_OPTIONS) !== undefined;
      const spec = withBackups({ restore: { enabled: true, repoName: 'repo1', options: [option] } });
      assert.equal(await refused(spec), expected, option);
    }
  });

  it('refuses a configuration entry that is not exactly one Secret or ConfigMap', async () => {
    const message = await rejection(
      withBackups({ configuration: [{ secret: { name: 'a' }, configMap: { name: 'b' } }] }),
    );
    assert.match(message, /spec\.backups\.pgbackrest\.configuration\[0\]: .*exactly one of secret or configMap/);
  });

  it('accepts one data source with the stanza defaulted, and refuses both kinds or forbidden options', async () => {
    const base = { postgresVersion: 16, instances: [{ dataVolumeClaimSpec: volume }] };
    const created = await accepted({
      ...base,
      dataSource: { pgbackrest: { repo: { name: 'repo1', s3 }, global: { 'repo1-path': '/pgbackrest/old' } } },
    });
    assert.equal(created.spec.dataSource?.pgbackrest?.stanza, 'db');
    await accepted({ ...base, dataSource: { postgresCluster: { clusterName: 'hippo', repoName: 'repo1' } } });
    const both = await rejection({
      ...base,
      dataSource: {
        postgresCluster: { clusterName: 'hippo', repoName: 'repo1' },
        pgbackrest: { repo: { name: 'repo1', s3 } },
      },
    });
    assert.match(both, /spec\.dataSource: .*at most one of postgresCluster or pgbackrest/);
    const option = await rejection({
      ...base,
      dataSource: { postgresCluster: { clusterName: 'hippo', repoName: 'repo1', options: ['--target-action=pause'] } },
    });
    assert.match(option, /spec\.dataSource\.postgresCluster\.options: .*options must not set/);
    const onVolume = await rejection({
      ...base,
      dataSource: { pgbackrest: { repo: { name: 'repo1', volume: { volumeClaimSpec: volume } } } },
    });
    assert.match(onVolume, /spec\.dataSource\.pgbackrest\.repo\.volume: /);
  });

  it('creates a PostgresBackup with defaults, refuses --type in options, and refuses any change of its spec', async () => {
    const spec = { cluster: 'hippo', repoName: 'repo1' };
    const typed = invalid(
      await backups()
        .create(
          {
            metadata: { name: 'typed', namespace: 'default' },
            spec: { ...spec, options: ['--type=diff'] },
          } as PostgresBackup,
          { dryRun: true },
        )
        .catch((e: unknown) => e),
    );
    assert.match(typed, /spec\.options: .*options must not set .*--type/);
    const badRepo = invalid(
      await backups()
        .create(
          { metadata: { name: 'r5', namespace: 'default' }, spec: { ...spec, repoName: 'repo5' } } as PostgresBackup,
          {
            dryRun: true,
          },
        )
        .catch((e: unknown) => e),
    );
    assert.match(badRepo, /spec\.repoName/);

    const created = await backups().create({ metadata: { name: 'b1', namespace: 'default' }, spec } as PostgresBackup);
    assert.equal(created.spec.type, 'full');
    assert.equal(created.spec.trigger, 'manual');
    const changed = invalid(
      await backups()
        .patch('b1', { spec: { type: 'incr' } }, { namespace: 'default' })
        .catch((e: unknown) => e),
    );
    assert.match(changed, /spec: .*spec is immutable/);
    // The status stays writable: the operator records the outcome there.
    const reported = await backups().patchStatus(
      'b1',
      {
        status: { phase: 'Succeeded', size: '96.2 MiB', sizeBytes: 100_873_011, walStart: '000000010000000000000003' },
      },
      { namespace: 'default' },
    );
    assert.equal(reported.status?.phase, 'Succeeded');
    assert.equal((await backups().get('b1', { namespace: 'default' })).spec.type, 'full');
  });
});
