#!/usr/bin/env node
// Rewrites README.md's table of the roles and verbs the PostgreSQL operator's install grants, from
// the built definitions (run `tsc -b` first). packages/postgres's rbac-table.test.ts fails while
// the README and the generated table differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const { RBAC_TABLE_BEGIN, RBAC_TABLE_END, rbacTable } = await import(
  join(root, 'packages/postgres/dist/src/operator/rbac-table.js')
);
const path = join(root, 'README.md');
const readme = readFileSync(path, 'utf8');
const begin = readme.indexOf(RBAC_TABLE_BEGIN);
const end = readme.indexOf(RBAC_TABLE_END);
if (begin < 0 || end < begin) throw new Error(`README.md lacks ${RBAC_TABLE_BEGIN} … ${RBAC_TABLE_END}`);
writeFileSync(path, readme.slice(0, begin) + rbacTable() + readme.slice(end + RBAC_TABLE_END.length));
console.log('README.md: the RBAC table is up to date');
