/**
 * fast-check generators of PostgresCluster specs for the fuzz tests: mostly what a user would
 * write, sometimes anything at all, so that both sides of every admission rule are reached.
 */
import fc from 'fast-check';

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };

/** Names from a small alphabet that reaches every edge: case, dots, underscores, digits first, length. */
const nameLike = (max: number) =>
  fc
    .array(fc.constantFrom('a', 'b', 'z', '0', '9', '-', '.', '_', 'A'), { minLength: 1, maxLength: max })
    .map((chars) => chars.join(''));
const longName = fc
  .tuple(fc.constantFrom('db', 'x'), fc.integer({ min: 0, max: 70 }))
  .map(([p, n]) => p + 'a'.repeat(n));
/** A valid DNS label of up to `max` characters, a letter first. */
const goodName = (max: number) =>
  fc
    .tuple(
      fc.constantFrom('a', 'd', 'p'),
      fc.array(fc.constantFrom('a', 'z', '0', '9', '-'), { maxLength: max - 2 }),
      fc.constantFrom('a', '1'),
    )
    .map(([first, middle, last]) => `${first}${middle.join('')}${last}`);
/** Mostly what a user would write, sometimes anything at all: both sides of every rule get reached. */
const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) =>
  fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: bad });
export const clusterName = mostly(goodName(12), fc.oneof(nameLike(12), longName));
/** A set name a user would write: a new set's holds no '-' (admission refuses it: its Pods could be another cluster's). */
const goodSetName = (max: number) => goodName(max).map((name) => name.replaceAll('-', ''));

const parameterValue = fc.oneof(fc.constantFrom('on', 'off', 'local', '0', '1', '16MB', ''), fc.integer(), fc.string());
const parameters = fc.dictionary(
  mostly(
    fc.constantFrom('max_connections', 'work_mem', 'log_min_duration_statement'),
    fc.oneof(
      fc.constantFrom(
        'max_connections',
        'shared_buffers',
        'fsync',
        'synchronous_commit',
        'archive_command',
        'DATA_DIRECTORY',
        'statement_timeout',
        'port',
        'work_mem',
      ),
      nameLike(10),
    ),
  ),
  mostly(fc.constantFrom('100', '4MB', 200), parameterValue),
  { maxKeys: 3 },
);
const instanceSet = fc.record(
  {
    name: mostly(goodSetName(8), nameLike(16)),
    replicas: mostly(fc.integer({ min: 1, max: 3 }), fc.integer({ min: -1, max: 10 })),
    dataVolumeClaimSpec: fc.constant(volume),
  },
  { requiredKeys: ['replicas', 'dataVolumeClaimSpec'] },
);
export const spec = fc.record(
  {
    postgresVersion: mostly(fc.constantFrom(14, 15, 16, 17), fc.integer({ min: 9, max: 19 })),
    instances: mostly(fc.array(instanceSet, { minLength: 1, maxLength: 2 }), fc.array(instanceSet, { maxLength: 4 })),
    users: fc.array(
      fc.record({
        name: mostly(goodName(10), fc.oneof(nameLike(10), fc.constantFrom('postgres', 'streaming_replica'))),
      }),
      { maxLength: 3 },
    ),
    config: fc.record({ parameters }),
    ha: mostly(
      fc.record({ maximumLagOnFailover: fc.constantFrom(16_777_216, 1_048_576) }, { requiredKeys: [] }),
      fc.record(
        {
          leaseDurationSeconds: fc.integer({ min: 0, max: 40 }),
          renewDeadlineSeconds: fc.integer({ min: 0, max: 30 }),
          retryPeriodSeconds: fc.integer({ min: 0, max: 10 }),
          synchronous: fc.record({ number: fc.integer({ min: 0, max: 4 }) }),
        },
        { requiredKeys: [] },
      ),
    ),
    service: fc.record({
      type: mostly(fc.constantFrom('ClusterIP', 'NodePort', 'LoadBalancer'), fc.constant('Ingress')),
    }),
    tls: fc.record(
      {
        serverSecret: mostly(goodName(12), nameLike(12)),
        replicationSecret: mostly(goodName(12), nameLike(12)),
        required: mostly(fc.boolean(), fc.constant('yes')),
      },
      { requiredKeys: [] },
    ),
    enableSuperuserAccess: mostly(fc.boolean(), fc.constant(1)),
  },
  { requiredKeys: ['postgresVersion', 'instances'] },
);
/** Mostly structured specs, some of them anything JSON at all. */
export const anySpec = fc.oneof(
  { weight: 9, arbitrary: spec },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/**
 * Strings that try to write a line of their own into a configuration file: a newline (or another
 * control character) followed by a setting the operator owns, quotes that would end a value early.
 */
const injection = fc.constantFrom(
  "1MB'\nfsync = off",
  "x'\nrestore_command = 'sh -c evil'",
  '2\npg1-host=evil.example',
  'zst\n[db]\npg1-path=/tmp',
  'a\rb',
  'a\u0000b',
  'tab\there',
  "it's",
  'back\\slash',
);
const text = (good: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: injection });

/** Parameters that read files, load libraries or run code, or try to inject lines; and what stays allowed. */
const riskyParameter = fc.dictionary(
  fc.constantFrom(
    'include',
    'include_if_exists',
    'shared_preload_libraries',
    'session_preload_libraries',
    'local_preload_libraries',
    'dynamic_library_path',
    'archive_library',
    'jit_provider',
    'log_directory',
    'ssl_ciphers',
    'ssl_crl_file',
    'ssl_passphrase_command',
    'application_name',
    'work_mem',
  ),
  fc.oneof(
    fc.constantFrom('pg_stat_statements', 'pg_stat_statements, auto_explain', 'auto_explain', '', 'HIGH:!aNULL', '4MB'),
    fc.constantFrom('/tmp/evil.so', '$libdir/plugins/evil', '../../tmp/x', '/etc/passwd', 'basic_archive', 'evil'),
    injection,
  ),
  { maxKeys: 2 },
);
const preload = fc.constantFrom('pg_stat_statements', 'pg_stat_statements, auto_explain', 'auto_explain', '');
const riskyParameters = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record(
      {
        shared_preload_libraries: preload,
        session_preload_libraries: preload,
        ssl_ciphers: fc.constant('HIGH:!aNULL'),
        application_name: text(fc.constantFrom('app', "it's")),
        work_mem: text(fc.constantFrom('4MB', '64kB')),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: riskyParameter },
);

const goodOption = fc.constantFrom(
  '--type=full',
  '--type=diff',
  '--annotation=reason=nightly',
  '--start-fast',
  '--no-start-fast',
  '--process-max=2',
);
const badOption = fc.oneof(
  fc.constantFrom(
    '--repo1-s3-endpoint=evil.example',
    '--repo1-path=/elsewhere',
    '--repo=2',
    '--config=/tmp/x',
    '--cmd-ssh=/bin/sh',
    '--exclude=base',
    '--no-archive-check',
    '--recovery-option=restore_command=sh',
    '--target-act=pause',
    '--type=standby',
    '--type',
    '--process-max=99',
  ),
  injection.map((value) => `--target=${value}`),
  injection.map((value) => `--annotation=a=${value}`),
  fc.string({ maxLength: 12 }).map((value) => `--${value}`),
);
/** Restore options: mostly a type with a target of its form, as users write them. */
const restoreOptions = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      [],
      ['--type=time', '--target=2026-01-02 03:04:05+00'],
      ['--type=time', '--target="2021-06-09 14:15:11-04"', '--target-exclusive'],
      ['--type=lsn', '--target=0/3000028'],
      ['--type=xid', '--target=1234'],
      ['--type=name', '--target=before upgrade'],
      ['--type=immediate', '--set=20260102-030405F'],
      ['--db-include=hippo', '--target-timeline=latest', '--process-max=2'],
    ),
  },
  {
    weight: 1,
    arbitrary: fc.array(
      fc.constantFrom(
        '--type=time',
        '--type=lsn',
        '--target=0/3000028',
        '--target=2026-01-02 03:04:05+00',
        '--target-timeline=current',
      ),
      { maxLength: 3 },
    ),
  },
  { weight: 1, arbitrary: fc.tuple(fc.constant('--type=name'), badOption).map((o) => [...o]) },
);
const options = (good: fc.Arbitrary<string>) =>
  fc.array(fc.oneof({ weight: 8, arbitrary: good }, { weight: 1, arbitrary: badOption }), { maxLength: 3 });

const globalOptions = fc.dictionary(
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('repo1-retention-full', 'compress-type', 'repo1-path', 'process-max') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'repo1-s3-key',
        'repo1-s3-key-secret',
        'repo-s3-key',
        'repo1-cipher-pass',
        'db-host',
        'backup-host',
        'pg1-host',
        'Repo1-path',
        'repo1-path\npg1-host',
        'a=b',
      ),
    },
  ),
  text(fc.constantFrom('2', 'zst', '/pgbackrest/x', '4')),
  { maxKeys: 3 },
);
const s3Repo = fc.record({
  name: fc.constant('repo1'),
  s3: fc.record({
    bucket: text(fc.constantFrom('backups', 'b.1')),
    endpoint: text(fc.constantFrom('s3.eu-west-1.amazonaws.com', 'localhost:9000')),
    region: text(fc.constantFrom('eu-west-1', 'us-east-1')),
  }),
});
const backups = fc.record({
  pgbackrest: fc.record(
    {
      repos: fc.tuple(s3Repo),
      global: globalOptions,
      manual: fc.record({ repoName: fc.constant('repo1'), options: options(goodOption) }),
      restore: fc.record({ enabled: fc.boolean(), repoName: fc.constant('repo1'), options: restoreOptions }),
    },
    { requiredKeys: ['repos'] },
  ),
});
const dataSource = fc.oneof(
  fc.record({
    postgresCluster: fc.record({
      clusterName: text(fc.constantFrom('hippo', 'old')),
      repoName: fc.constant('repo1'),
      options: restoreOptions,
    }),
  }),
  fc.record({
    pgbackrest: fc.record(
      {
        stanza: fc.constantFrom('db', 'other'),
        repo: s3Repo,
        global: globalOptions,
        options: restoreOptions,
      },
      { requiredKeys: ['repo'] },
    ),
  }),
);

/**
 * Specs with the fields a user or a neighbour could use to inject configuration or reach another
 * repository: backups (global, repos, manual and restore options), a data source, and parameters
 * that read files or load code. Mostly what a user would write.
 */
const withSecurityFields = fc
  .tuple(
    // A spec admission takes as it is, so that what it refuses is the new fields'.
    fc.record({
      postgresVersion: fc.constantFrom(15, 16),
      instances: fc.constant([{ dataVolumeClaimSpec: volume }]),
    }),
    fc.record({ backups, dataSource, parameters: riskyParameters }, { requiredKeys: [] }),
  )
  .map(([base, { parameters, ...fields }]) => ({
    ...base,
    ...fields,
    ...(parameters ? { config: { parameters } } : {}),
  }));
export const securitySpec = fc.oneof({ weight: 1, arbitrary: spec }, { weight: 2, arbitrary: withSecurityFields });

/** A PostgresBackup's spec: its options, mostly allowed, sometimes anything. */
export const backupSpec = fc.record({
  cluster: fc.constant('hippo'),
  repoName: fc.constant('repo1'),
  type: fc.constantFrom('full', 'diff', 'incr'),
  options: options(goodOption),
});
