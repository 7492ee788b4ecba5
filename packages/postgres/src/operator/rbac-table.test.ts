import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { mergeRules } from '@kanri/api';
import { buildInstanceRoleRules, buildRepoHostRoleRules } from '../contract/index.js';
import { postgresOperator } from './definition.js';
import { RBAC_TABLE_BEGIN, RBAC_TABLE_END, rbacTable, TABLE_INSTANCE_ROLE, tableRoles } from './rbac-table.js';

// Compiled to packages/postgres/dist/src/operator: the repository's README is five levels up.
const readme = readFileSync(new URL('../../../../../README.md', import.meta.url), 'utf8');

describe("the README's table of roles and verbs", () => {
  it('is the one generated from the RBAC the install grants (run `node scripts/readme-rbac.mjs` after a change)', () => {
    const begin = readme.indexOf(RBAC_TABLE_BEGIN);
    const end = readme.indexOf(RBAC_TABLE_END);
    assert.ok(begin >= 0 && end > begin, 'README.md has the table markers');
    assert.equal(readme.slice(begin, end + RBAC_TABLE_END.length), rbacTable());
  });

  it("lists every rule of the operator's roles, the instance Role and the repo host's Role, and nothing they lack", () => {
    const [main, ...others] = tableRoles();
    const written = postgresOperator.rbac().filter((o) => String(o.kind).endsWith('Role'));
    const rulesOf = (kind: string, name: string) =>
      written.find((o) => o.kind === kind && (o.metadata as { name: string }).name === name)?.rules;
    assert.deepEqual(mergeRules(main?.rules ?? []), rulesOf('ClusterRole', postgresOperator.name));
    for (const role of postgresOperator.explainRbac().slice(1))
      assert.deepEqual(mergeRules(role.rules), rulesOf(role.kind, role.name), role.name);
    const rulesOfRole = (name: string) =>
      others.find((r) => r.role.includes(`\`${name}\``))?.rules.map(({ reason: _, ...rule }) => rule);
    const { cluster, users, options } = TABLE_INSTANCE_ROLE;
    assert.deepEqual(rulesOfRole('<cluster>-instance'), buildInstanceRoleRules(cluster, users, options));
    assert.deepEqual(rulesOfRole('<cluster>-repo-host'), buildRepoHostRoleRules('<cluster>'));
  });
});
