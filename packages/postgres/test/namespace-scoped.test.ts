/**
 * Issue 16, finding 7 and acceptance 6: the operator installed for one namespace runs under Roles
 * only. Its RBAC comes from `postgresOperator.rbac({ watchNamespace })` (what the chart renders
 * with `watchNamespace` set) and it runs with KANRI_WATCH_NAMESPACE: a cluster in that namespace
 * becomes Ready, one elsewhere is never touched, and no ClusterRole grants the operator anything.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObject } from '@kanri/client';
import { postgresOperator } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv } from './harness.js';

const TEAM = 'team-a';
const subjectName = postgresOperator.name;

describe('the operator installed for one namespace', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, watchNamespace: TEAM });
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs())?.split('\n').slice(-80).join('\n'));
    await env?.stop();
  });

  it('holds no ClusterRole: its rules are Roles in the watched namespace and its own', async () => {
    type Binding = KubeObject & {
      subjects?: { kind: string; name: string }[];
      roleRef: { kind: string; name: string };
    };
    const bound = (items: Binding[]) =>
      items.filter((b) => b.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === subjectName));
    const clusterWide = bound(
      (await env.client.resource<Binding>('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding').list()).items,
    );
    assert.deepEqual(clusterWide, [], 'no ClusterRoleBinding names the operator');
    const inTeam = bound(
      (await env.client.resource<Binding>('rbac.authorization.k8s.io/v1', 'RoleBinding').list({ namespace: TEAM }))
        .items,
    );
    assert.deepEqual(
      inTeam.map((b) => b.roleRef.kind),
      ['Role'],
    );
  });

  it('runs a cluster in that namespace to Ready, and never touches one elsewhere', async () => {
    const team = clusterManifest('scoped', 1);
    team.metadata = { name: 'scoped', namespace: TEAM };
    await clusters(env.client).create(team);
    const outside = clusterManifest('outside', 1);
    await clusters(env.client).create(outside);
    const ready = await (async () => {
      const deadline = Date.now() + 180_000;
      for (;;) {
        const c = await clusters(env.client).get('scoped', { namespace: TEAM });
        const condition = c.status?.conditions?.find((x) => x.type === 'Ready');
        if (condition?.status === 'True') return c;
        if (Date.now() > deadline) throw new Error(`scoped not Ready: ${condition?.message ?? 'no status'}`);
        await sleep(500);
      }
    })();
    assert.equal(ready.status?.readyInstances, 1);
    // By now the operator has had every chance to see the other one.
    const untouched = await clusters(env.client).get('outside', { namespace: 'default' });
    assert.equal(untouched.status, undefined, 'no status written outside the watched namespace');
    const pods = await env.client.resource('v1', 'Pod').list({ namespace: 'default' });
    assert.equal(pods.items.length, 0, 'no Pod created outside it');
  });
});
