/**
 * The Helm chart's values.schema.json, checked with a real JSON Schema validator (Ajv, draft-07
 * as the schema declares): the chart's own values pass, and a misspelt or mistyped key is
 * refused with its path named, as Helm refuses it on install, upgrade, template and lint.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv, type ErrorObject } from 'ajv';
import { parse } from 'yaml';
import { defineOperator, helmChart } from '../src/index.js';
import { Gizmo, gizmoOperator, gizmos } from './packaging-fixture.js';

type Values = Record<string, unknown>;

/** The chart's default values and a validator compiled from its schema. */
function chartOf(files: ReturnType<typeof helmChart>) {
  const file = (path: string) => files.find((f) => f.path === path)?.content ?? assert.fail(`no ${path}`);
  const validate = new Ajv({ allErrors: true, strict: true }).compile(JSON.parse(file('values.schema.json')));
  /** The schema's complaints about `values`, as `<path> <message>` lines; empty when valid. */
  const problems = (values: unknown): string[] =>
    validate(values)
      ? []
      : (validate.errors ?? []).map((e: ErrorObject) => {
          const extra = e.keyword === 'additionalProperties' ? ` ${String(e.params.additionalProperty)}` : '';
          return `${e.instancePath || '/'} ${e.message ?? e.keyword}${extra}`;
        });
  return { defaults: parse(file('values.yaml')) as Values, problems };
}

/** `values` with `path` (dot-separated) set to `value`, leaving the original untouched. */
function withKey(values: Values, path: string, value: unknown): Values {
  const copy = structuredClone(values);
  const keys = path.split('.');
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as Values;
  node[keys.at(-1) ?? ''] = value;
  return copy;
}

describe('values.schema.json of the Helm chart', () => {
  const { defaults, problems } = chartOf(helmChart(gizmoOperator));

  it("accepts the chart's own values, and the global key Helm adds", () => {
    assert.deepEqual(problems(defaults), []);
    assert.deepEqual(problems({ ...defaults, global: { imageRegistry: 'mirror.example' } }), []);
    assert.deepEqual(problems(withKey(defaults, 'replicas', 3)), []);
    assert.deepEqual(problems(withKey(defaults, 'serviceMonitor.labels', { release: 'prometheus' })), []);
  });

  it('refuses a misspelt key at the top level and inside each closed object, naming it', () => {
    const misspelt: [path: string, where: string, key: string][] = [
      ['replica', '/', 'replica'],
      ['leaderElections', '/', 'leaderElections'],
      ['image.tags', '/image', 'tags'],
      ['metrics.prot', '/metrics', 'prot'],
      ['serviceMonitor.enable', '/serviceMonitor', 'enable'],
      ['crdDeletionGuard.enable', '/crdDeletionGuard', 'enable'],
    ];
    for (const [path, where, key] of misspelt) {
      assert.deepEqual(
        problems(withKey(defaults, path, true)),
        [`${where} must NOT have additional properties ${key}`],
        `values with ${path}`,
      );
    }
  });

  it('refuses values of the wrong type or range', () => {
    assert.deepEqual(problems(withKey(defaults, 'replicas', '3')), ['/replicas must be integer']);
    assert.deepEqual(problems(withKey(defaults, 'replicas', -1)), ['/replicas must be >= 0']);
    assert.deepEqual(problems(withKey(defaults, 'metrics.port', 70_000)), ['/metrics/port must be <= 65535']);
    assert.deepEqual(problems(withKey(defaults, 'image.pullPolicy', 'Sometimes')), [
      '/image/pullPolicy must be equal to one of the allowed values',
    ]);
    assert.deepEqual(problems(withKey(defaults, 'podAnnotations', { team: 7 })), [
      '/podAnnotations/team must be string',
    ]);
  });

  it('has no crdDeletionGuard key for an operator without the guard', () => {
    const scoped = chartOf(
      helmChart(
        defineOperator({ name: 'gizmo-operator', resources: [Gizmo], controllers: [gizmos], watchNamespace: 'team-a' }),
      ),
    );
    assert.equal(scoped.defaults.crdDeletionGuard, undefined);
    assert.deepEqual(scoped.problems(scoped.defaults), []);
    assert.deepEqual(scoped.problems({ ...scoped.defaults, crdDeletionGuard: { enabled: true } }), [
      '/ must NOT have additional properties crdDeletionGuard',
    ]);
  });
});
