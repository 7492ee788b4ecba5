#!/usr/bin/env node
/**
 * Writes packages/postgres/test/fixtures/pgo-postgrescluster-fields.json: every field path of
 * Crunchy PGO's PostgresCluster spec (v1beta1), from PGO's CRD, for the test that fails when a PGO
 * field is neither implemented nor refused by name (packages/postgres/test/pgo-fields.test.ts).
 * Only the field names are kept, not PGO's schema.
 *
 * The walk stops at fields that hold a Kubernetes type (affinity, resources, a volume claim spec,
 * containers…) or one of PGO's structures taken whole (metadata, projections): Kanri passes those
 * through or refuses them as one field.
 *
 *   node scripts/pgo-field-paths.mjs <postgres-operator.crunchydata.com_postgresclusters.yaml> <source description>
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** Fields walked no deeper (see above). */
export const WHOLE_FIELDS = [
  'affinity',
  'annotations',
  'claims',
  'configuration',
  'containers',
  'dataVolumeClaimSpec',
  'env',
  'envFrom',
  'exporter',
  'files',
  'imagePullSecrets',
  'labels',
  'metadata',
  'resources',
  'secretRef',
  'securityContext',
  'sidecars',
  'tolerations',
  'topologySpreadConstraints',
  'volumeClaimSpec',
  'volumes',
  'walVolumeClaimSpec',
];

/** Every field path under `node` (`spec.instances[].name`: `[]` steps into an array's items). Pure. */
export function fieldPaths(node, path = 'spec', out = []) {
  if (node.type === 'array' && node.items) return fieldPaths(node.items, `${path}[]`, out);
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const at = `${path}.${name}`;
    out.push(at);
    if (!WHOLE_FIELDS.includes(name)) fieldPaths(child, at, out);
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [crdPath, source] = process.argv.slice(2);
  if (!crdPath || !source) throw new Error('usage: node scripts/pgo-field-paths.mjs <crd.yaml> <source description>');
  const crd = parse(await readFile(crdPath, 'utf8'));
  const version = crd.spec.versions.find((v) => v.name === 'v1beta1');
  if (!version) throw new Error(`${crdPath} has no v1beta1`);
  const fields = fieldPaths(version.schema.openAPIV3Schema.properties.spec);
  const out = new URL('../packages/postgres/test/fixtures/pgo-postgrescluster-fields.json', import.meta.url);
  await writeFile(
    out,
    `${JSON.stringify({ source, version: 'v1beta1', wholeFields: WHOLE_FIELDS, fields }, null, 2)}\n`,
  );
  console.log(`${fields.length} PGO field paths written to ${fileURLToPath(out)}`);
}
