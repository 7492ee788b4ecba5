import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { defineResource, pluralize } from './define-resource.js';
import { SchemaError } from './structural-schema.js';

const spec = z.object({ size: z.number().int().min(1).default(1) });

describe('defineResource', () => {
  it('builds a structural CRD: no safe-integer noise, defaults kept, spec required', () => {
    const Thing = defineResource({
      group: 'example.com',
      kind: 'Thing',
      shortNames: ['th'],
      versions: { v1: { spec } },
    });
    assert.equal(Thing.crd.metadata.name, 'things.example.com');
    assert.equal(Thing.apiVersion, 'example.com/v1');
    const [version] = Thing.crd.spec.versions as {
      schema: { openAPIV3Schema: { properties: { spec: unknown }; required: string[] } };
    }[];
    assert.deepEqual(version?.schema.openAPIV3Schema.properties.spec, {
      type: 'object',
      properties: { size: { type: 'integer', minimum: 1, default: 1 } },
    });
    assert.deepEqual(version?.schema.openAPIV3Schema.required, ['spec']);
  });

  it('puts object-level CEL rules (the name with the spec) at the root of the schema, and none when not asked', () => {
    const rule = { rule: 'self.metadata.name.size() <= 20', message: 'metadata.name: at most 20 characters' };
    const root = (versions: Parameters<typeof defineResource>[0]['versions']) =>
      (
        defineResource({ group: 'example.com', kind: 'Thing', versions }).crd.spec.versions as {
          schema: { openAPIV3Schema: Record<string, unknown> };
        }[]
      )[0]?.schema.openAPIV3Schema;
    assert.deepEqual(root({ v1: { spec, validations: [rule] } })?.['x-kubernetes-validations'], [rule]);
    assert.equal(root({ v1: { spec } })?.['x-kubernetes-validations'], undefined);
  });

  it('requires exactly one storage version when there are several', () => {
    const versions = { v1: { spec }, v2: { spec } };
    assert.throws(
      () => defineResource({ group: 'g', kind: 'Thing', versions }),
      /exactly one version must set storage: true \(found none among v1, v2\)/,
    );
    const ok = defineResource({ group: 'g', kind: 'Thing', versions: { v1: { spec }, v2: { spec, storage: true } } });
    assert.equal(ok.apiVersion, 'g/v2');
  });

  it('refuses what Kubernetes cannot express, naming the field', () => {
    const union = z.object({ port: z.union([z.number(), z.string()]) });
    assert.throws(
      () => defineResource({ group: 'g', kind: 'Thing', versions: { v1: { spec: union } } }),
      (e: unknown) =>
        e instanceof SchemaError &&
        /Thing\.v1\.spec\.port/.test(e.message) &&
        /unions are not structural/.test(e.message),
    );
    const untyped = z.object({ blob: z.unknown() });
    assert.throws(
      () => defineResource({ group: 'g', kind: 'Thing', versions: { v1: { spec: untyped } } }),
      /blob: every field needs a type/,
    );
  });

  it('turns loose objects into preserved unknown fields and records into additionalProperties', () => {
    const loose = z.object({ extra: z.looseObject({}), labels: z.record(z.string(), z.string()) });
    const Thing = defineResource({ group: 'g', kind: 'Thing', versions: { v1: { spec: loose } } });
    const text = JSON.stringify(Thing.crd);
    assert.match(text, /"extra":\{"type":"object","properties":\{\},"x-kubernetes-preserve-unknown-fields":true\}/);
    assert.match(text, /"labels":\{"type":"object","additionalProperties":\{"type":"string"\}\}/);
    assert.doesNotMatch(text, /propertyNames|\$schema/);
  });

  it('pluralizes kinds by English rules', () => {
    assert.deepEqual(['Widget', 'Policy', 'Class', 'Key'].map(pluralize), ['widgets', 'policies', 'classes', 'keys']);
  });
});
