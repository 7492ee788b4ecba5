import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PolicyRule } from 'kubernetes-types/rbac/v1.js';
import { buildInstanceRoleRules } from '../contract/index.js';
import { postgresOperator } from './definition.js';

it('holds every permission it grants the instances (RBAC refuses to grant more than the granter has)', () => {
  const clusterRole = postgresOperator.rbac().find((o) => o.kind === 'ClusterRole') as { rules?: PolicyRule[] };
  const held = (group: string, resource: string, verb: string) =>
    (clusterRole.rules ?? []).some(
      (r) =>
        (r.apiGroups ?? []).includes(group) &&
        (r.resources ?? []).includes(resource) &&
        (r.verbs.includes(verb) || r.verbs.includes('*')) &&
        !r.resourceNames?.length,
    );
  const missing = buildInstanceRoleRules('db', ['app']).flatMap((rule) =>
    (rule.apiGroups ?? []).flatMap((group) =>
      (rule.resources ?? []).flatMap((resource) =>
        rule.verbs.filter((verb) => !held(group, resource, verb)).map((verb) => `${verb} ${group}/${resource}`),
      ),
    ),
  );
  assert.deepEqual(missing, []);
});
