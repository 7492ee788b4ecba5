/**
 * Issue 41, "No silent drops": every field of Crunchy PGO's PostgresCluster (v1beta1, the field
 * paths of PGO's CRD in fixtures/pgo-postgrescluster-fields.json) is either in Kanri's schema or
 * refused at admission by name, with why, for every client: a manifest written for PGO never loses
 * a setting without its author being told. The first part walks the schemas (fails on a PGO field
 * that is neither, and on a refusal that names no PGO field); the second has a real API server
 * refuse each refused field, through a client that does not ask for strict field validation.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { InvalidError, type KubeClient } from '@kanri/client';
import {
  PGO_REFUSED_FIELDS,
  PGO_TABLE_BEGIN,
  PGO_TABLE_END,
  type PostgresCluster,
  PostgresClusterResource,
  pgoFieldCoverage,
  pgoFieldTable,
} from '../src/index.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';

const fixture = JSON.parse(
  await readFile(new URL('../../test/fixtures/pgo-postgrescluster-fields.json', import.meta.url), 'utf8'),
) as { source: string; fields: string[] };

describe("PGO's PostgresCluster fields", () => {
  const coverage = pgoFieldCoverage(fixture.fields);

  it('each is implemented by Kanri or refused by name', () => {
    assert.ok(fixture.fields.length > 300, `${fixture.fields.length} PGO fields read from ${fixture.source}`);
    assert.deepEqual(
      coverage.filter((c) => c.status === 'missing').map((c) => c.field),
      [],
      'PGO fields Kanri neither implements nor refuses',
    );
    const refused = coverage.filter((c) => c.status === 'refused').length;
    const implemented = coverage.filter((c) => c.status === 'implemented').length;
    console.log(`${fixture.fields.length} PGO fields: ${implemented} implemented, ${refused} refused`);
  });

  it("README's table is generated from the same data (node scripts/readme-pgo-fields.mjs rewrites it)", async () => {
    const readme = await readFile(new URL('../../../../README.md', import.meta.url), 'utf8');
    const begin = readme.indexOf(PGO_TABLE_BEGIN);
    const end = readme.indexOf(PGO_TABLE_END);
    assert.ok(begin >= 0 && end > begin, 'the README has the table markers');
    assert.equal(readme.slice(begin, end + PGO_TABLE_END.length), pgoFieldTable(fixture.fields, fixture.source));
  });

  it('every refusal names a field of PGO', () => {
    const pgo = new Set(fixture.fields);
    assert.deepEqual(
      Object.keys(PGO_REFUSED_FIELDS).filter((path) => !pgo.has(`spec.${path}`)),
      [],
    );
  });
});

describe('PGO fields Kanri refuses, against a real API server', () => {
  let env: AdmissionEnv;
  let client: KubeClient;
  before(async () => {
    env = await startAdmissionEnv([PostgresClusterResource]);
    client = env.client;
  });
  after(async () => {
    await env?.stop();
  });

  const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
  const s3 = { bucket: 'b', endpoint: 's3.eu-west-1.amazonaws.com', region: 'eu-west-1' };
  /** A valid spec with every parent a refused field can sit in; `pgbackrest: true` clones from a repo instead of a cluster. */
  const base = (pgbackrest = false): Record<string, unknown> => ({
    postgresVersion: 16,
    instances: [{ replicas: 1, dataVolumeClaimSpec: volume }],
    users: [{ name: 'app', databases: ['app'] }],
    config: { parameters: { max_connections: 100 } },
    service: { type: 'ClusterIP' },
    backups: { pgbackrest: { repos: [{ name: 'repo1', s3 }], restore: { enabled: false, repoName: 'repo1' } } },
    dataSource: pgbackrest
      ? { pgbackrest: { stanza: 'db', repo: { name: 'repo1', s3 } } }
      : { postgresCluster: { clusterName: 'source', repoName: 'repo1' } },
  });
  const create = (spec: Record<string, unknown>) =>
    client
      .resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster')
      .create({ metadata: { name: 'pgo', namespace: 'default' }, spec } as PostgresCluster, { dryRun: true });

  /** `spec` with `value` at `path` (`[]` steps into the first item); the field path the API server names. */
  const withField = (spec: Record<string, unknown>, path: string, value: unknown): string => {
    let node: Record<string, unknown> = spec;
    const named: string[] = [];
    const steps = path.split('.');
    for (const [i, step] of steps.entries()) {
      const name = step.replace('[]', '');
      if (i === steps.length - 1) {
        node[name] = value;
        named.push(name);
        break;
      }
      if (step.endsWith('[]')) {
        node = (node[name] as Record<string, unknown>[])[0] as Record<string, unknown>;
        named.push(`${name}[0]`);
      } else {
        // A parent object the base spec leaves out (spec.patroni, say) is made empty.
        node[name] ??= {};
        node = node[name] as Record<string, unknown>;
        named.push(name);
      }
    }
    return `spec.${named.join('.')}`;
  };

  /** A value of the field's own type, as PGO's manifests carry it. */
  const sample = (path: string): unknown => {
    const values = {
      object: { fromPgo: true },
      string: 'from-pgo',
      integer: 5433,
      number: 1.5,
      boolean: true,
      'int-or-string': 1,
    } as const;
    const field = PGO_REFUSED_FIELDS[path];
    if (!field) throw new Error(`${path} is not refused`);
    return field.type === 'array' ? [values[field.items ?? 'object']] : values[field.type];
  };

  it('accepts the specs the refused fields are put into', async () => {
    await create(base());
    await create(base(true));
  });

  it('refuses each, naming the field and saying why, where kubectl without --validate=strict would prune it', async () => {
    const unnamed: string[] = [];
    for (const [path, { why }] of Object.entries(PGO_REFUSED_FIELDS)) {
      const spec = base(path.startsWith('dataSource.pgbackrest.'));
      const at = withField(spec, path, sample(path));
      const error = await create(spec).catch((e: unknown) => e);
      assert.ok(error instanceof InvalidError, `${path}: refused as invalid, not ${error}`);
      if (!error.message.includes(`${at}: Forbidden: ${why}`)) unnamed.push(`${at}: ${error.message}`);
    }
    assert.deepEqual(unnamed, []);
  });

  it('refuses them all at once, each by name', async () => {
    const spec = base();
    const expected = Object.entries(PGO_REFUSED_FIELDS)
      .filter(([path]) => !path.startsWith('dataSource.pgbackrest.'))
      .map(([path, { why }]) => `${withField(spec, path, sample(path))}: Forbidden: ${why}`);
    const error = await create(spec).catch((e: unknown) => e);
    assert.ok(error instanceof InvalidError, String(error));
    assert.deepEqual(
      expected.filter((line) => !error.message.includes(line)),
      [],
    );
  });
});
