/**
 * Where each of Crunchy PGO's PostgresCluster fields stands in Kanri: implemented (in the CRD's
 * schema, with what Kanri's description says of it), refused at admission (pgo-fields.ts, with
 * why), or missing (neither: a defect the PGO-fields test fails on). The README's table is this,
 * generated (scripts/readme-pgo-fields.mjs). Pure: PGO's field paths are given, from the test
 * fixture PGO's CRD was read into.
 */
import { PGO_REFUSED_FIELDS } from './pgo-fields.js';
import { PostgresClusterResource } from './postgres-cluster.js';

/** Where the table sits in README.md. */
export const PGO_TABLE_BEGIN = '<!-- pgo-fields:begin (generated: node scripts/readme-pgo-fields.mjs) -->';
export const PGO_TABLE_END = '<!-- pgo-fields:end -->';

type Schema = {
  readonly type?: string;
  readonly description?: string;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly items?: Schema;
  readonly additionalProperties?: unknown;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
};

export interface FieldCoverage {
  /** PGO's path, `spec.instances[].name`. */
  readonly field: string;
  readonly status: 'implemented' | 'refused' | 'missing';
  /** What Kanri does with it: its description, or why it is refused. */
  readonly how: string;
  /** For a field under a refused one: the refused path (`spec.userInterface`). */
  readonly refusedWith?: string;
}

/** The spec schema of PostgresCluster's CRD, refused fields included. */
export function crdSpecSchema(): Schema {
  const [version] = PostgresClusterResource.crd.spec.versions as { schema: { openAPIV3Schema: Schema } }[];
  return version?.schema.openAPIV3Schema.properties?.spec ?? {};
}

/** The first sentence of a description, for a table cell. */
function firstSentence(text: string | undefined): string {
  // A sentence ends at a full stop before a capital, not at "e.g.".
  const sentence = (text ?? '').split(/(?<=\.)(?<!e\.g\.)\s+(?=[A-Z])/)[0] ?? '';
  return sentence.replaceAll('|', '\\|');
}

/** Where `field` (PGO's path) stands in `spec` (Kanri's CRD spec schema). */
function coverageOf(field: string, spec: Schema): FieldCoverage {
  const steps = field.split('.').slice(1);
  let node: Schema = spec;
  const walked: string[] = [];
  for (const step of steps) {
    const name = step.replace(/\[\]$/, '');
    const child = node.properties?.[name];
    walked.push(step);
    if (!child) {
      // A map or a preserved structure keeps what PGO puts in it.
      if (node.additionalProperties || node['x-kubernetes-preserve-unknown-fields'])
        return { field, status: 'implemented', how: `kept whole in spec.${walked.slice(0, -1).join('.')}` };
      return { field, status: 'missing', how: '' };
    }
    const path = walked.join('.');
    if (child.description?.startsWith('Refused: ')) {
      const why = PGO_REFUSED_FIELDS[path]?.why ?? child.description.slice('Refused: '.length);
      return path === steps.join('.')
        ? { field, status: 'refused', how: why }
        : { field, status: 'refused', how: `refused with spec.${path}`, refusedWith: `spec.${path}` };
    }
    node = step.endsWith('[]') ? (child.items ?? {}) : child;
  }
  return { field, status: 'implemented', how: firstSentence(node.description) };
}

/**
 * Each of PGO's `fields`, in their order, with where it stands in Kanri.
 *
 * @example
 * ```ts
 * pgoFieldCoverage(['spec.postgresVersion', 'spec.userInterface']);
 * // [{ field: 'spec.postgresVersion', status: 'implemented', how: 'PostgreSQL major version: 14, 15, 16, 17.' },
 * //  { field: 'spec.userInterface', status: 'refused', how: 'pgAdmin is not part of Kanri; remove it' }]
 * ```
 */
export function pgoFieldCoverage(fields: readonly string[], spec: Schema = crdSpecSchema()): FieldCoverage[] {
  return fields.map((field) => coverageOf(field, spec));
}

/**
 * The README's table, between its markers: one row per PGO field, except the fields under a
 * refused one, which its row counts.
 *
 * @example
 * ```ts
 * readme.replace(/<!-- pgo-fields:begin[^]*?pgo-fields:end -->/, pgoFieldTable(fields, source));
 * ```
 */
export function pgoFieldTable(fields: readonly string[], source: string): string {
  const coverage = pgoFieldCoverage(fields);
  const under = new Map<string, number>();
  for (const c of coverage) if (c.refusedWith) under.set(c.refusedWith, (under.get(c.refusedWith) ?? 0) + 1);
  const rows = coverage
    .filter((c) => !c.refusedWith)
    .map((c) => {
      const more = under.get(c.field);
      const status = c.status === 'refused' ? '**refused**' : c.status;
      const below = more === 1 ? ' (and the field under it)' : more ? ` (and the ${more} fields under it)` : '';
      return `| \`${c.field}\`${below} | ${status} | ${c.how} |`;
    });
  const count = (status: FieldCoverage['status']) => coverage.filter((c) => c.status === status).length;
  return [
    PGO_TABLE_BEGIN,
    `PGO's ${fields.length} PostgresCluster fields (${source}): ${count('implemented')} implemented, ${count('refused')} refused by name${count('missing') ? `, ${count('missing')} MISSING` : ''}.`,
    '',
    '| PGO field | in Kanri | how |',
    '|---|---|---|',
    ...rows,
    PGO_TABLE_END,
  ].join('\n');
}
