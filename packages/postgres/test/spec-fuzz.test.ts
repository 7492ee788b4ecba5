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
 * The seed is fixed so CI is repeatable; FUZZ_SEED and FUZZ_RUNS explore further. Running the
 * operator and agents on admitted specs is spec-fuzz-converge.test.ts.
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
import { anySpec, clusterName } from './support/spec-arbitraries.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const SEED = Number(process.env.FUZZ_SEED ?? 20261202);
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
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
