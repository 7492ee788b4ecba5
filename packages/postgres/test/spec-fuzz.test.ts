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
 * Issue 37 adds the fields through which a spec could write configuration or reach another
 * repository (backups' global, repos and options, a data source, parameters that read files or
 * load code; securitySpec), and for every admitted spec:
 *
 * - the rendered postgresql.conf (the operator's lines, then the agent's kanri.conf) and
 *   pgbackrest.conf (the cluster's, and a data source's restore configuration) hold only the lines
 *   the spec meant, each value reading back as written, and the agent writes them (no refusal);
 * - the agent's own checks (parameters, global credentials, backup and restore options) pass:
 *   nothing admitted is refused later, or runs something admission meant to refuse.
 *
 * A PostgresBackup property does the same for its options: admitted exactly when the agent's
 * check would run it.
 *
 * The seed is fixed so CI is repeatable; FUZZ_SEED and FUZZ_RUNS explore further. Running the
 * operator and agents on admitted specs is spec-fuzz-converge.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InvalidError, type KubeClient } from '@kanri/client';
import fc from 'fast-check';
import { refusedSpec } from '../src/agent/backups/backup-runner.js';
import { renderKanriConf } from '../src/agent/plan/postgres-conf.js';
import { restoreOptions } from '../src/agent/roles/restore.js';
import { refusedParameter } from '../src/api/parameter-rules.js';
import { buildPgBackRestConf, CONFIG_KEY, names, type PgBackRestSpec, restoreStoredAt } from '../src/contract/index.js';
import {
  BACKUP_OPTIONS,
  isCredentialGlobalOption,
  type PostgresBackup,
  PostgresBackupResource,
  type PostgresCluster,
  PostgresClusterResource,
  refusedOption,
} from '../src/index.js';
import { planRepoPaths } from '../src/operator/backups/repo-paths.js';
import { resolveCloneSource } from '../src/operator/backups/restore-source.js';
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
import { pgbackrestConfProblems, postgresConfProblems } from './support/config-lines.js';
import { backupSpec, clusterName, securitySpec } from './support/spec-arbitraries.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const SEED = Number(process.env.FUZZ_SEED ?? 20261202);
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

/** Mostly structured specs, with the fields issue 37 adds; some of them anything JSON at all. */
const anySpec = fc.oneof(
  { weight: 9, arbitrary: securitySpec },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

const PATHS = {
  pgPath: '/pgdata/pg',
  socketPath: '/run/pg',
  port: 5432,
  spoolPath: '/pgdata/spool',
  logPath: '/run/log',
  lockPath: '/run/lock',
};

/** Where the operator would locate a new cluster's repos (a `global.repoN-path` included). */
function repoPaths(cluster: PostgresCluster, spec: PgBackRestSpec): Record<string, string> {
  const { namespace = 'default', name = '', uid = '1f0e' } = cluster.metadata ?? {};
  return planRepoPaths({ namespace, name, uid, spec, recorded: undefined, established: false }).paths;
}

/** A pgbackrest.conf the agent would write for `spec`: a refusal or a stray line is a problem. */
function pgbackrestProblems(what: string, write: () => ReturnType<typeof buildPgBackRestConf>): string[] {
  try {
    const { text, options } = write();
    return pgbackrestConfProblems(text, options).map((p) => `${what}: ${p}`);
  } catch (error) {
    return [`${what}: the agent refuses to write it: ${(error as Error).message}`];
  }
}

/**
 * What would reach a configuration file or a pgBackRest command line from an admitted spec and
 * should not: a line it did not mean, or anything the agent's own checks refuse.
 */
function configurationProblems(cluster: PostgresCluster): string[] {
  const problems: string[] = [];
  const parameters = cluster.spec.config?.parameters ?? {};
  const refused = refusedParameter(parameters);
  if (refused) problems.push(`parameter ${refused.name} admitted: ${refused.why}`);
  const conf = postgresConfig(cluster).data?.[CONFIG_KEY.parameters] ?? '';
  problems.push(...postgresConfProblems(conf, parameters).map((p) => `postgresql.conf: ${p}`));
  const kanri = renderKanriConf(conf, { port: '5432', listen_addresses: '10.0.0.1' });
  if (kanri.overridden.length > 0) problems.push(`kanri.conf: the spec set ${kanri.overridden.join(', ')}`);
  const pgbackrest = cluster.spec.backups?.pgbackrest;
  if (pgbackrest) {
    const spec = pgbackrest as PgBackRestSpec;
    problems.push(
      ...pgbackrestProblems('pgbackrest.conf', () =>
        buildPgBackRestConf({ storedAt: repoPaths(cluster, spec), spec, paths: PATHS }),
      ),
    );
    const manual = refusedOption(pgbackrest.manual?.options, BACKUP_OPTIONS);
    if (manual) problems.push(`manual option ${manual.option} admitted`);
    const restore = restoreOptions(pgbackrest.restore?.options);
    if (typeof restore === 'string') problems.push(`restore: ${restore}`);
  }
  for (const global of [pgbackrest?.global, cluster.spec.dataSource?.pgbackrest?.global])
    for (const key of Object.keys(global ?? {}))
      if (isCredentialGlobalOption(key)) problems.push(`credential ${key} admitted in global`);
  const { source } = resolveCloneSource(cluster, undefined);
  if (source) {
    problems.push(
      ...pgbackrestProblems('restore pgbackrest.conf', () =>
        buildPgBackRestConf({
          storedAt: restoreStoredAt(source, undefined),
          stanza: source.stanza,
          spec: {
            repos: [source.repo as PgBackRestSpec['repos'][number]],
            ...(source.global ? { global: source.global } : {}),
          },
          paths: PATHS,
        }),
      ),
    );
  }
  const sourceOptions =
    cluster.spec.dataSource?.postgresCluster?.options ?? cluster.spec.dataSource?.pgbackrest?.options;
  const restored = restoreOptions(sourceOptions);
  if (typeof restored === 'string') problems.push(`dataSource: ${restored}`);
  return problems;
}
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
    env = await startAdmissionEnv([PostgresClusterResource, PostgresBackupResource]);
    client = env.client;
  });
  after(async () => {
    await env?.stop();
  });

  it(`refuses naming a field, or admits what the operator can plan and name (${RUNS} specs, seed ${SEED})`, async () => {
    const clusters = client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
    const outcomes = { admitted: 0, refused: 0, backups: 0, dataSource: 0, parameters: 0 };
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
        if (admitted.spec.backups) outcomes.backups++;
        if (admitted.spec.dataSource) outcomes.dataSource++;
        if (Object.keys(admitted.spec.config?.parameters ?? {}).length > 0) outcomes.parameters++;
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
        assert.deepEqual(configurationProblems(admitted), [], `admitted ${name} with ${JSON.stringify(candidate)}`);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    const top = [...refusedAt].sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(
      `# fuzz: ${RUNS} specs (seed ${SEED}): ${outcomes.admitted} admitted and planned (${outcomes.backups} with backups, ${outcomes.dataSource} with a data source, ${outcomes.parameters} with parameters), ${outcomes.refused} refused naming a field; most refused at ${top.map(([f, n]) => `${f} ${n}`).join(', ')}`,
    );
    assert.ok(outcomes.admitted > RUNS / 20, 'the generator reaches admitted specs too');
  });

  it(`admits a PostgresBackup exactly when the agent would run its options (${RUNS} specs, seed ${SEED})`, async () => {
    const backups = client.resource<PostgresBackup>(PostgresBackupResource.apiVersion, 'PostgresBackup');
    const outcomes = { admitted: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(backupSpec, async (spec) => {
        const admitted = await backups
          .create({ metadata: { name: 'fuzz', namespace: 'default' }, spec } as PostgresBackup, { dryRun: true })
          .then(
            () => true,
            (error: unknown) => {
              assert.ok(error instanceof InvalidError, `refused as invalid, not ${error}`);
              assert.match(error.message, /spec\.options/);
              return false;
            },
          );
        outcomes[admitted ? 'admitted' : 'refused']++;
        assert.equal(admitted, refusedSpec(spec) === undefined, JSON.stringify(spec));
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(`# fuzz: ${RUNS} PostgresBackup specs: ${outcomes.admitted} admitted, ${outcomes.refused} refused`);
    assert.ok(outcomes.admitted > 0 && outcomes.refused > 0, 'the generator reaches both sides');
  });
});
