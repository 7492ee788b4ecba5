/**
 * The README's table of every role the install grants and why: the operator's roles
 * (`postgresOperator.explainRbac()`), each cluster's instance Role (`explainInstanceRoleRules`) and
 * its repo host's Role (`explainRepoHostRoleRules`), rule by rule with its reason. Generated, so the README cannot drift from the RBAC
 * (rbac-table.test.ts compares them; `node scripts/readme-rbac.mjs` rewrites the table). Pure.
 */
import type { ExplainedRole, ExplainedRule } from '@kanri/api';
import { explainInstanceRoleRules, explainRepoHostRoleRules, names } from '../contract/index.js';
import { postgresOperator } from './definition.js';

/** Where the table sits in README.md. */
export const RBAC_TABLE_BEGIN = '<!-- rbac-table:begin (generated: node scripts/readme-rbac.mjs) -->';
export const RBAC_TABLE_END = '<!-- rbac-table:end -->';

const CLUSTER = '<cluster>';

/** A role of the table: what it is, where it applies, its rules. */
interface TableRole {
  readonly role: string;
  readonly where: string;
  readonly rules: readonly ExplainedRule[];
}

/**
 * The instance Role as the table shows it: with every name it can hold, the older scheme's shared
 * pgBackRest Secret included (granted only while a cluster still has it).
 */
export const TABLE_INSTANCE_ROLE = {
  cluster: CLUSTER,
  users: ['<user>'],
  options: { sharedPgbackrestTls: true, databaseInitSqlConfigMap: '<spec.databaseInitSQL.name>' },
};

/** The roles, as the operator's definition and the instance and repo host Role builders give them. */
export function tableRoles(): TableRole[] {
  const where = (role: ExplainedRole) =>
    role.kind === 'ClusterRole'
      ? 'cluster-wide (installed for one namespace: a Role there, without the rules on cluster-scoped objects)'
      : `the operator's namespace (\`${role.namespace}\`)`;
  return [
    ...postgresOperator.explainRbac().map((role) => ({
      role: `${role.kind} \`${role.name}\` (operator)`,
      where: where(role),
      rules: role.rules,
    })),
    {
      role: `Role \`${names.instanceServiceAccount(CLUSTER)}\` (instances)`,
      where: "each cluster's namespace",
      rules: explainInstanceRoleRules(
        TABLE_INSTANCE_ROLE.cluster,
        TABLE_INSTANCE_ROLE.users,
        TABLE_INSTANCE_ROLE.options,
      ),
    },
    {
      role: `Role \`${names.repoHostServiceAccount(CLUSTER)}\` (repo host)`,
      where: "each cluster's namespace, while it has a volume repo",
      rules: explainRepoHostRoleRules(CLUSTER),
    },
  ];
}

const code = (items: readonly string[]) => items.map((i) => `\`${i}\``).join(', ');
const resourceOf = (rule: ExplainedRule) =>
  rule.apiGroups.flatMap((group) => rule.resources.map((r) => (group ? `${group}/${r}` : r)));

/**
 * The table's Markdown, between its markers.
 *
 * @example
 * ```ts
 * readme.replace(/<!-- rbac-table:begin[^]*?rbac-table:end -->/, rbacTable());
 * ```
 */
export function rbacTable(): string {
  // A role and where it applies head its first row only: the rows under it are its rules.
  const rows = tableRoles().flatMap(({ role, where, rules }) =>
    rules.map(
      (rule, i) =>
        `| ${i === 0 ? role : ''} | ${i === 0 ? where : ''} | ${code(resourceOf(rule))} | ${rule.verbs.join(', ')} | ${code(rule.resourceNames ?? [])} | ${rule.reason} |`,
    ),
  );
  return [
    RBAC_TABLE_BEGIN,
    '| Role | Where | Resources | Verbs | Names | Why |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    RBAC_TABLE_END,
  ].join('\n');
}
