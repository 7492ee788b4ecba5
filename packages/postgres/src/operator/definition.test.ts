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

it('holds what running a repo host takes: its Pod and PVCs, the CA and TLS Secrets', () => {
  const clusterRole = postgresOperator.rbac().find((o) => o.kind === 'ClusterRole') as { rules?: PolicyRule[] };
  const held = (resource: string, verb: string) =>
    (clusterRole.rules ?? []).some(
      (r) =>
        (r.apiGroups ?? []).includes('') &&
        (r.resources ?? []).includes(resource) &&
        r.verbs.includes(verb) &&
        !r.resourceNames?.length,
    );
  const needed = [
    ['pods', 'create'],
    ['pods', 'delete'],
    ['persistentvolumeclaims', 'create'],
    ['secrets', 'get'],
    ['secrets', 'create'],
    ['secrets', 'patch'],
  ];
  assert.deepEqual(
    needed.filter(([resource, verb]) => !held(resource ?? '', verb ?? '')),
    [],
  );
});
