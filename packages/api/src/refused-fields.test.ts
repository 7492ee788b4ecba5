import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { defineResource } from './define-resource.js';
import { refuseFields } from './refused-fields.js';
import type { JsonSchema } from './structural-schema.js';

const spec: JsonSchema = {
  type: 'object',
  properties: {
    size: { type: 'integer' },
    sets: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
    backups: {
      type: 'object',
      properties: { repo: { type: 'string' } },
      'x-kubernetes-validations': [{ rule: 'true' }],
    },
  },
};

describe('refuseFields', () => {
  it('keeps each refused field from pruning and refuses it on its parent, at the field, with the message given', () => {
    const out = refuseFields(
      spec,
      {
        ui: { type: 'object', why: 'not part of this operator; remove it' },
        'sets[].sidecars': { type: 'array', why: 'no sidecars yet' },
        groups: { type: 'array', items: 'integer', why: 'no groups' },
        port: { type: 'integer', why: 'always 5432' },
        minAvailable: { type: 'int-or-string', why: 'set by the operator' },
      },
      'W',
    );
    const props = out.properties as Record<string, JsonSchema>;
    assert.deepEqual(props.ui, {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      description: 'Refused: not part of this operator; remove it',
    });
    assert.deepEqual(props.port, { type: 'integer', description: 'Refused: always 5432' });
    assert.deepEqual(props.groups, { type: 'array', items: { type: 'integer' }, description: 'Refused: no groups' });
    assert.deepEqual(props.minAvailable, {
      'x-kubernetes-int-or-string': true,
      description: 'Refused: set by the operator',
    });
    assert.deepEqual((out['x-kubernetes-validations'] as JsonSchema[])[0], {
      rule: '!has(self.ui)',
      message: 'not part of this operator; remove it',
      fieldPath: '.ui',
      reason: 'FieldValueForbidden',
    });
    const item = (props.sets as JsonSchema).items as JsonSchema;
    assert.deepEqual((item.properties as Record<string, JsonSchema>).sidecars?.items, {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
    assert.equal((item['x-kubernetes-validations'] as JsonSchema[])[0]?.rule, '!has(self.sidecars)');
  });

  it('adds to the rules a parent has, and leaves its input alone', () => {
    const out = refuseFields(spec, { 'backups.jobs': { type: 'object', why: 'no jobs' } }, 'W');
    const backups = (out.properties as Record<string, JsonSchema>).backups as JsonSchema;
    assert.deepEqual(
      (backups['x-kubernetes-validations'] as JsonSchema[]).map((r) => r.rule),
      ['true', '!has(self.jobs)'],
    );
    const original = (spec.properties as Record<string, JsonSchema>).backups as JsonSchema;
    assert.equal((original.properties as Record<string, JsonSchema>).jobs, undefined);
  });

  it('refuses a field the schema implements, and one whose parent is not an object of the schema', () => {
    assert.throws(
      () => refuseFields(spec, { size: { type: 'integer', why: 'x' } }, 'W'),
      /W\.size: refusedFields: the schema has this field/,
    );
    assert.throws(
      () => refuseFields(spec, { 'missing.field': { type: 'string', why: 'x' } }, 'W'),
      /W\.missing\.field: refusedFields: its parent is not an object/,
    );
    assert.throws(
      () => refuseFields(spec, { 'size.field': { type: 'string', why: 'x' } }, 'W'),
      /its parent is not an object/,
    );
  });
});

describe('defineResource refusedFields', () => {
  it("puts the refusals into the version's spec schema", () => {
    const R = defineResource({
      group: 'example.com',
      kind: 'Widget',
      versions: {
        v1: {
          spec: z.object({ size: z.number() }),
          refusedFields: { color: { type: 'string', why: 'widgets have no color' } },
        },
      },
    });
    const schema = (R.crd.spec.versions as { schema: { openAPIV3Schema: JsonSchema } }[])[0]?.schema.openAPIV3Schema;
    const specSchema = (schema?.properties as Record<string, JsonSchema> | undefined)?.spec ?? {};
    assert.ok((specSchema.properties as Record<string, JsonSchema>).color);
    assert.match(JSON.stringify(specSchema['x-kubernetes-validations']), /widgets have no color/);
  });
});
