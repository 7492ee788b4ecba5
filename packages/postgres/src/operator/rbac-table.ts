/**
 * The README's table of every role the install grants and why: the operator's roles
 * (`postgresOperator.explainRbac()`) and each cluster's instance Role (`explainInstanceRoleRules`),
 * rule by rule with its reason. Generated, so the README cannot drift from the RBAC
 * (rbac-table.test.ts compares them; `node scripts/readme-rbac.mjs` rewrites the table). Pure.
 */
import type { ExplainedRole, ExplainedRule } from '@kanri/api';
import { explainInstanceRoleRules, names } from '../contract/index.js';
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

/** The roles, as the operator's definition and the instance Role builder give them. */
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
      rules: explainInstanceRoleRules(CLUSTER, ['<user>']),
    },
  ];
}

/** Roles not generated here yet, each a clearly marked row until its change lands. */
const PENDING_ROWS = [
  `| Role \`${CLUSTER}-repo-host\` (repo host) | each cluster's namespace | — | — | — | **placeholder (issue 37, finding 3): the repo host's own ServiceAccount and Role add their rows here** |`,
];

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
    ...PENDING_ROWS,
    RBAC_TABLE_END,
  ].join('\n');
}
