/**
 * Issue 16, "a spec fuzzer": random and mutated PostgresCluster specs (fast-check), each sent
 * through a real API server's admission (dry run) and, when admitted, through the operator's pure
 * planner and builders. Properties:
 *
 * - every refusal names a field (`spec.…` or `metadata.name`);
 * - the operator's planning and builders never throw on an admitted spec;
 * - every admitted spec yields names Kubernetes and postgres accept: Pods and Services DNS labels
 *   (Services a letter first), Secrets DNS subdomains, replication slots at most 63 bytes.
 *
 * The seed is fixed so CI is repeatable; FUZZ_SEED and FUZZ_RUNS explore further. What it does
 * not do yet: run the operator and agents on the admitted specs to check that each converges or
 * says why in a condition.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InvalidError, type KubeClient } from '@kanri/client';
import fc from 'fast-check';
import { names } from '../src/contract/index.js';
import { type PostgresCluster, PostgresClusterResource } from '../src/index.js';
import { dataVolumeClaim } from '../src/operator/builders/data-volume-claim.js';
import { disruptionBudget } from '../src/operator/builders/disruption-budget.js';
import { instancePod } from '../src/operator/builders/instance-pod.js';
import { instanceRbac } from '../src/operator/builders/instance-rbac.js';
import { networkPolicy } from '../src/operator/builders/network-policy.js';
import { postgresConfig } from '../src/operator/builders/postgres-config.js';
import { secrets } from '../src/operator/builders/secrets.js';
import { services } from '../src/operator/builders/services.js';
import { planInstances } from '../src/operator/instance-plan.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261202);
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

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
const clusterName = mostly(goodName(12), fc.oneof(nameLike(12), longName));

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
    name: mostly(goodName(8), nameLike(16)),
    replicas: mostly(fc.integer({ min: 1, max: 3 }), fc.integer({ min: -1, max: 10 })),
    dataVolumeClaimSpec: fc.constant(volume),
  },
  { requiredKeys: ['replicas', 'dataVolumeClaimSpec'] },
);
const spec = fc.record(
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
const anySpec = fc.oneof({ weight: 9, arbitrary: spec }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });

/** The names the operator derives from an admitted cluster, and why each must hold. */
function namesProblems(cluster: PostgresCluster): string[] {
  const problems: string[] = [];
  const check = (what: string, name: string, ok: boolean) => {
    if (!ok) problems.push(`${what} ${JSON.stringify(name)}`);
  };
  const c = cluster.metadata?.name ?? '';
  for (const service of services(cluster))
    check('Service', service.metadata?.name ?? '', DNS_1035.test(service.metadata?.name ?? ''));
  check(
    'NetworkPolicy',
    networkPolicy(cluster).metadata?.name ?? '',
    DNS_SUBDOMAIN.test(networkPolicy(cluster).metadata?.name ?? ''),
  );
  for (const secret of [names.postgresTls(c), names.postgresCa(c)]) check('Secret', secret, DNS_SUBDOMAIN.test(secret));
  for (const secret of secrets(cluster, {
    superuser: 'p',
    replication: 'p',
    users: Object.fromEntries((cluster.spec.users ?? []).map((u) => [u.name, 'p'])),
  }))
    check('Secret', secret.metadata?.name ?? '', DNS_SUBDOMAIN.test(secret.metadata?.name ?? ''));
  const plan = planInstances(c, cluster.spec, [], false);
  for (const instance of plan.keep) {
    check('Pod', instance.name, DNS_LABEL.test(instance.name));
    check('slot', names.slot(instance.name), Buffer.byteLength(names.slot(instance.name)) <= 63);
  }
  return problems;
}

describe('PostgresCluster specs, fuzzed through admission and the operator’s planning', {
  timeout: 10 * 60_000,
}, () => {
  let env: AdmissionEnv;
  let client: KubeClient;
  before(async () => {
    env = await startAdmissionEnv([PostgresClusterResource]);
    client = env.client;
  });
  after(async () => {
    await env?.stop();
  });

  it(`refuses naming a field, or admits what the operator can plan and name (${RUNS} specs, seed ${SEED})`, async () => {
    const clusters = client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
    const outcomes = { admitted: 0, refused: 0 };
    const refusedAt = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(clusterName, anySpec, async (name, candidate) => {
        let admitted: PostgresCluster;
        try {
          admitted = await clusters.create(
            { metadata: { name, namespace: 'default' }, spec: candidate } as PostgresCluster,
            { dryRun: true },
          );
        } catch (error) {
          assert.ok(error instanceof InvalidError, `refused as invalid, not ${error}`);
          const fields = [...error.message.matchAll(/(spec(?:\.[\w[\]]+)*|metadata\.name)/g)].map(
            (m) => m[1] as string,
          );
          assert.ok(fields.length > 0, `the refusal names a field: ${error.message}`);
          outcomes.refused++;
          const field = (fields[0] as string).replace(/\[\d+\]/g, '[]');
          refusedAt.set(field, (refusedAt.get(field) ?? 0) + 1);
          return;
        }
        outcomes.admitted++;
        // What the operator does with it, short of I/O: plan, build, name.
        const plan = planInstances(name, admitted.spec, [], false);
        for (const [index, instance] of plan.keep.entries()) {
          dataVolumeClaim(admitted, instance.name, instance.set, instance.setIndex);
          instancePod({ cluster: admitted, ...instance, bootstrap: index === 0 ? 'initdb' : 'basebackup' });
        }
        postgresConfig(admitted);
        networkPolicy(admitted);
        disruptionBudget(admitted);
        instanceRbac(admitted);
        assert.deepEqual(namesProblems(admitted), [], `admitted ${name} with ${JSON.stringify(candidate)}`);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    const top = [...refusedAt].sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(
      `# fuzz: ${RUNS} specs (seed ${SEED}): ${outcomes.admitted} admitted and planned, ${outcomes.refused} refused naming a field; most refused at ${top.map(([f, n]) => `${f} ${n}`).join(', ')}`,
    );
    assert.ok(outcomes.admitted > RUNS / 20, 'the generator reaches admitted specs too');
  });
});
