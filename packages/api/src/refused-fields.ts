/**
 * Fields a custom resource refuses by name. A structural schema prunes a field it does not know:
 * strict `kubectl` refuses it, but every other client (Helm, Argo CD, a Go or Python client) gets
 * at most a warning, and the field vanishes. A resource that takes manifests written for another
 * operator's CRD (Kanri's PostgresCluster takes PGO's) must instead say what it will not do: each
 * refused field is kept in the schema (so it is never pruned) and a CEL rule on its parent refuses
 * it with the message given, for every client: the API server reports
 * `spec.userInterface: Forbidden: <message>`. Pure.
 */
import { type JsonSchema, SchemaError } from './structural-schema.js';

/** The JSON type of a refused field, as the other CRD has it: CEL can only test a typed field's presence. */
export type RefusedFieldType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'int-or-string';

/** One refused field: its type, and why it is refused and what to do instead (the admission message). */
export interface RefusedField {
  readonly type: RefusedFieldType;
  /** For an array, its items' type. Default `object`. */
  readonly items?: Exclude<RefusedFieldType, 'array'>;
  readonly why: string;
}

/**
 * Paths under the spec (`userInterface`, `instances[].containers`, `backups.pgbackrest.jobs`;
 * `[]` steps into an array's items) → each refused field.
 */
export type RefusedFields = Readonly<Record<string, RefusedField>>;

/** The schema a refused field is kept under: its type, whatever it holds preserved. */
function keptSchema(field: RefusedField): JsonSchema {
  const description = `Refused: ${field.why}`;
  return field.type === 'array'
    ? { type: 'array', items: typed(field.items ?? 'object'), description }
    : { ...typed(field.type), description };
}

/** A schema of `type` that keeps whatever a value of it holds. */
function typed(type: Exclude<RefusedFieldType, 'array'>): JsonSchema {
  if (type === 'object') return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  if (type === 'int-or-string') return { 'x-kubernetes-int-or-string': true };
  return { type };
}

/** The steps of a refused field's path: its parent's property names (`[]` marking arrays) and its name. */
function parsePath(path: string): { parents: string[]; field: string } {
  const steps = path.split('.');
  const field = steps.pop() ?? '';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field))
    throw new SchemaError(path, 'refusedFields: a refused field is a plain property name');
  return { parents: steps, field };
}

/** The object schema at `steps` under `root`, or undefined when the schema has no such object. */
function objectAt(root: JsonSchema, steps: readonly string[]): JsonSchema | undefined {
  let node: JsonSchema | undefined = root;
  for (const step of steps) {
    const name = step.endsWith('[]') ? step.slice(0, -2) : step;
    node = (node?.properties as Record<string, JsonSchema> | undefined)?.[name];
    if (node && step.endsWith('[]')) node = node.items as JsonSchema | undefined;
  }
  return node?.type === 'object' && node.properties ? node : undefined;
}

/**
 * `spec` with every field of `refused` kept and refused: a property of its type that preserves
 * whatever it holds, and a rule on its parent, `!has(self.<field>)`, with its `why` as the
 * message, reported at the field. Throws a SchemaError for a refused field whose
 * parent is not an object of the schema, or that the schema already has (a field is either
 * implemented or refused). `spec` is not modified.
 *
 * @example
 * ```ts
 * const schema = refuseFields(spec, { userInterface: { type: 'object', why: 'pgAdmin is not part of Kanri; remove it' } }, 'PostgresCluster.v1.spec');
 * // schema.properties.userInterface: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, description: 'Refused: …' }
 * // schema['x-kubernetes-validations']: [..., { rule: '!has(self.userInterface)', message: 'pgAdmin …', fieldPath: '.userInterface', … }]
 * ```
 */
export function refuseFields(spec: JsonSchema, refused: RefusedFields, where: string): JsonSchema {
  const result = structuredClone(spec);
  for (const [path, refusal] of Object.entries(refused)) {
    const { parents, field } = parsePath(path);
    const parent = objectAt(result, parents);
    if (!parent) throw new SchemaError(`${where}.${path}`, 'refusedFields: its parent is not an object of the schema');
    const properties = parent.properties as Record<string, JsonSchema>;
    if (properties[field])
      throw new SchemaError(`${where}.${path}`, 'refusedFields: the schema has this field; it cannot also be refused');
    properties[field] = keptSchema(refusal);
    const rules = (parent['x-kubernetes-validations'] as JsonSchema[] | undefined) ?? [];
    parent['x-kubernetes-validations'] = [
      ...rules,
      { rule: `!has(self.${field})`, message: refusal.why, fieldPath: `.${field}`, reason: 'FieldValueForbidden' },
    ];
  }
  return result;
}
