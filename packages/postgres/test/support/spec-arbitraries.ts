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
