/**
 * defineResource: one declaration of a custom resource gives its TypeScript types and its
 * CustomResourceDefinition (structural schema, defaults, descriptions, CEL rules, printer
 * columns, status and scale subresources, several versions with exactly one stored).
 */
import { z } from 'zod';
import { type RefusedFields, refuseFields } from './refused-fields.js';
import { type JsonSchema, SchemaError, toStructuralSchema } from './structural-schema.js';

export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
}

export interface VersionDefinition<Spec extends z.ZodType = z.ZodType, Status extends z.ZodType = z.ZodType> {
  readonly spec: Spec;
  readonly status?: Status;
  /** Default true. */
  readonly served?: boolean;
  /** Exactly one version is stored; with a single version it is that one. */
  readonly storage?: boolean;
  readonly deprecated?: boolean;
  readonly printerColumns?: readonly PrinterColumn[];
  /**
   * CEL rules on the whole object, for what spans its name and its spec (`self.metadata.name`, the
   * only metadata besides `generateName` that CEL sees, and `self.spec`). Rules on the spec alone
   * belong on the spec's schema.
   */
  readonly validations?: readonly ObjectValidation[];
  /**
   * Spec fields refused by name, for every client (refused-fields.ts): path under the spec →
   * why, and what to do instead. For a resource that takes another operator's manifests: a field
   * it does not implement is refused, never silently pruned.
   */
  readonly refusedFields?: RefusedFields;
  /** Enables the scale subresource (for `kubectl scale` and autoscalers). */
  readonly scale?: {
    readonly specReplicasPath: string;
    readonly statusReplicasPath: string;
    readonly labelSelectorPath?: string;
  };
}

/** One `x-kubernetes-validations` rule at the root of a version's schema. */
export interface ObjectValidation {
  readonly rule: string;
  readonly message?: string;
  readonly messageExpression?: string;
  /** A path in the schema (`.spec.instances`); metadata is not in it, so a rule on the name has none. */
  readonly fieldPath?: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  /**
   * Evaluate the rule on create too, with `oldSelf` an optional (`oldSelf.hasValue()`): a rule for
   * new objects only, or one that lets an existing object keep what a newer rule refuses.
   */
  readonly optionalOldSelf?: boolean;
}

export interface ResourceDefinitionInput<V extends Record<string, VersionDefinition>> {
  readonly group: string;
  readonly kind: string;
  /** Default: the kind in lower case, made plural by simple English rules. */
  readonly plural?: string;
  readonly scope?: 'Namespaced' | 'Cluster';
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  /** Shown by `kubectl explain <kind>`. */
  readonly description?: string;
  readonly versions: V;
}

type StorageVersion<V extends Record<string, VersionDefinition>> = {
  [K in keyof V]: V[K] extends { storage: true } ? K : never;
}[keyof V];
type Chosen<V extends Record<string, VersionDefinition>> = [StorageVersion<V>] extends [never]
  ? keyof V
  : StorageVersion<V>;

/** The object type of a version: what the API server returns (defaults applied). */
export type ResourceObject<D extends VersionDefinition> = {
  apiVersion?: string;
  kind?: string;
  metadata?: import('kubernetes-types/meta/v1.js').ObjectMeta;
  spec: z.output<D['spec']>;
  status?: D['status'] extends z.ZodType ? z.output<D['status']> : never;
};

export interface ResourceDefinition<V extends Record<string, VersionDefinition>> {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  /** `group/version` of the storage version. */
  readonly apiVersion: string;
  readonly storageVersion: string;
  readonly crd: CustomResourceDefinitionObject;
  /** Type-only: the stored version's object type. Use `typeof R.$object`. */
  readonly $object: ResourceObject<V[Chosen<V>]>;
}

export interface CustomResourceDefinitionObject {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

/** The kind's plural by simple English rules: Policy → policies, Class → classes, Widget → widgets. */
export function pluralize(kind: string): string {
  const lower = kind.toLowerCase();
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
}

function jsonSchemaOf(schema: z.ZodType, path: string): JsonSchema {
  // `input` keeps defaulted fields optional and adds no additionalProperties: false (see DESIGN §5).
  const raw = z.toJSONSchema(schema, { io: 'input', cycles: 'throw', target: 'openapi-3.0', unrepresentable: 'throw' });
  return toStructuralSchema(raw as JsonSchema, path);
}

/**
 * Declares a custom resource.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * import { defineResource } from '@kanri/api';
 *
 * export const Website = defineResource({
 *   group: 'example.kanri.dev',
 *   kind: 'Website',
 *   shortNames: ['site'],
 *   versions: {
 *     v1: {
 *       spec: z.object({
 *         html: z.string().min(1).describe('The page to serve'),
 *         replicas: z.number().int().min(1).default(2),
 *       }),
 *       status: z.object({ ready: z.boolean().optional() }),
 *       printerColumns: [{ name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' }],
 *     },
 *   },
 * });
 * export type Website = typeof Website.$object;   // { spec: { html: string; replicas: number }, status?: … }
 * await client.apply(Website.crd, { fieldManager: 'installer' });
 * ```
 */
export function defineResource<const V extends Record<string, VersionDefinition>>(
  input: ResourceDefinitionInput<V>,
): ResourceDefinition<V> {
  const names = Object.keys(input.versions);
  if (names.length === 0) throw new SchemaError(input.kind, 'versions: at least one version is required');
  const stored = names.length === 1 ? names : names.filter((n) => input.versions[n]?.storage === true);
  if (stored.length !== 1) {
    throw new SchemaError(
      input.kind,
      `versions: exactly one version must set storage: true (found ${stored.length ? stored.join(', ') : 'none'} among ${names.join(', ')})`,
    );
  }
  const storageVersion = stored[0] as string;
  const plural = input.plural ?? pluralize(input.kind);
  const versions = names.map((name) => {
    const version = input.versions[name] as VersionDefinition;
    const where = `${input.kind}.${name}.spec`;
    const spec = jsonSchemaOf(version.spec, where);
    const properties: JsonSchema = {
      spec: version.refusedFields ? refuseFields(spec, version.refusedFields, where) : spec,
    };
    if (version.status) properties.status = jsonSchemaOf(version.status, `${input.kind}.${name}.status`);
    const subresources: Record<string, unknown> = {};
    if (version.status) subresources.status = {};
    if (version.scale) subresources.scale = { ...version.scale };
    return {
      name,
      served: version.served ?? true,
      storage: name === storageVersion,
      ...(version.deprecated ? { deprecated: true } : {}),
      schema: {
        openAPIV3Schema: {
          type: 'object',
          ...(input.description ? { description: input.description } : {}),
          properties,
          required: ['spec'],
          ...(version.validations?.length
            ? { 'x-kubernetes-validations': version.validations.map((v) => ({ ...v })) }
            : {}),
        },
      },
      ...(Object.keys(subresources).length ? { subresources } : {}),
      ...(version.printerColumns?.length
        ? { additionalPrinterColumns: version.printerColumns.map((c) => ({ ...c })) }
        : {}),
    };
  });
  const crd: CustomResourceDefinitionObject = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${input.group}`, labels: { 'app.kubernetes.io/managed-by': 'kanri' } },
    spec: {
      group: input.group,
      scope: input.scope ?? 'Namespaced',
      names: {
        kind: input.kind,
        plural,
        singular: input.kind.toLowerCase(),
        listKind: `${input.kind}List`,
        ...(input.shortNames?.length ? { shortNames: [...input.shortNames] } : {}),
        ...(input.categories?.length ? { categories: [...input.categories] } : {}),
      },
      versions,
    },
  };
  return {
    group: input.group,
    kind: input.kind,
    plural,
    apiVersion: `${input.group}/${storageVersion}`,
    storageVersion,
    crd,
    $object: undefined as never,
  };
}
