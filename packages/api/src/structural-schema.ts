/**
 * Turns zod's OpenAPI 3.0 JSON Schema into a Kubernetes structural schema. Pure.
 *
 * Kubernetes rejects parts of JSON Schema that zod can emit: `$ref`, `type: null`,
 * `patternProperties`, `uniqueItems`, `propertyNames`, and unions other than "nullable". Those are
 * removed where dropping them loses nothing (zod's safe-integer bounds, `additionalProperties:
 * false`) and refused otherwise, with an error naming the field, rather than producing a CRD the
 * API server would reject or, worse, accept with different meaning.
 */

export type JsonSchema = { [keyword: string]: unknown };

/** A schema zod produced that Kubernetes cannot express; `path` names the field (`spec.ports[]`). */
export class SchemaError extends Error {
  override name = 'SchemaError';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path || '(root)'}: ${message}`);
  }
}

const SAFE = Number.MAX_SAFE_INTEGER;
const DROPPED = new Set(['$schema', 'uniqueItems', 'propertyNames', 'id', '$id']);

/** Returns a structural copy of `schema`; throws SchemaError naming the first unsupported field. */
export function toStructuralSchema(schema: JsonSchema, path = ''): JsonSchema {
  const out: JsonSchema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (DROPPED.has(keyword)) continue;
    switch (keyword) {
      case '$ref':
      case '$defs':
      case 'definitions':
        throw new SchemaError(path, 'recursive or shared schemas ($ref) are not allowed in a CRD; inline the type');
      case 'patternProperties':
        throw new SchemaError(path, 'patternProperties is not allowed in a CRD; use a record of a single value type');
      case 'anyOf':
      case 'oneOf':
        throw new SchemaError(
          path,
          'unions are not structural; use an enum of literals, optional fields, or a CEL rule',
        );
      case 'type':
        if (value === 'null' || (Array.isArray(value) && value.includes('null'))) {
          throw new SchemaError(path, 'type null is not allowed; use .nullable() on a typed field');
        }
        out.type = value;
        break;
      case 'minimum':
      case 'maximum':
        // zod bounds every integer to the safe range; Kubernetes needs no such noise in its schema.
        if (schema.type === 'integer' && Math.abs(value as number) === SAFE) break;
        out[keyword] = value;
        break;
      case 'additionalProperties':
        if (value === false) break; // Kubernetes prunes unknown fields anyway, and rejects `false`.
        if (value === true || (typeof value === 'object' && value !== null && Object.keys(value).length === 0)) {
          out['x-kubernetes-preserve-unknown-fields'] = true;
        } else {
          out.additionalProperties = toStructuralSchema(value as JsonSchema, `${path}[*]`);
        }
        break;
      case 'properties': {
        const properties: JsonSchema = {};
        for (const [name, child] of Object.entries(value as Record<string, JsonSchema>)) {
          properties[name] = toStructuralSchema(child, path ? `${path}.${name}` : name);
        }
        out.properties = properties;
        break;
      }
      case 'items':
        if (Array.isArray(value))
          throw new SchemaError(path, 'tuples are not allowed in a CRD; use an array of one type');
        out.items = toStructuralSchema(value as JsonSchema, `${path}[]`);
        break;
      default:
        out[keyword] = value;
    }
  }
  if (out.type === undefined && !out['x-kubernetes-preserve-unknown-fields'] && !out['x-kubernetes-int-or-string']) {
    throw new SchemaError(
      path,
      'every field needs a type (z.unknown()/z.any() are not structural; use z.record or z.looseObject)',
    );
  }
  return out;
}
