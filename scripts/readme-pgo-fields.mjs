#!/usr/bin/env node
/**
 * Rewrites README.md's table of Crunchy PGO's PostgresCluster fields (implemented / refused / how)
 * from packages/postgres/test/fixtures/pgo-postgrescluster-fields.json and the compiled schema.
 * Run after `tsc -b`; packages/postgres/test/pgo-fields.test.ts fails while the table is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { PGO_TABLE_BEGIN, PGO_TABLE_END, pgoFieldTable } from '@kanri/postgres';

const readmeUrl = new URL('../README.md', import.meta.url);
const fixture = JSON.parse(
  await readFile(
    new URL('../packages/postgres/test/fixtures/pgo-postgrescluster-fields.json', import.meta.url),
    'utf8',
  ),
);
const readme = await readFile(readmeUrl, 'utf8');
const begin = readme.indexOf(PGO_TABLE_BEGIN);
const end = readme.indexOf(PGO_TABLE_END);
if (begin < 0 || end < begin) throw new Error(`README.md has no ${PGO_TABLE_BEGIN} … ${PGO_TABLE_END}`);
const table = pgoFieldTable(fixture.fields, fixture.source);
const next = readme.slice(0, begin) + table + readme.slice(end + PGO_TABLE_END.length);
if (next === readme) console.log('README.md: the PGO field table is up to date');
else {
  await writeFile(readmeUrl, next);
  console.log('README.md: the PGO field table rewritten');
}
