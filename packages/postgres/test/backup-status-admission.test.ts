/**
 * Issue 37, finding 7: an instance writes the status only of its own cluster's PostgresBackups,
 * against a real API server with the instance Role (contract/instance-rbac.ts, which grants
 * `patch` on every PostgresBackup's status in the namespace) and the admission policy
 * (contract/instance-backup-policy.ts), with the identity the agent has: the cluster's
 * ServiceAccount and a token bound to its Pod.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, type KubeClient, type KubeObject } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import { PostgresBackupResource } from '../src/api/postgres-backup.js';
import { API_VERSION, BACKUP_KIND, instanceBackupStatusPolicies } from '../src/contract/index.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';
import { instanceClient } from './support/instance-identity.js';

const NS = 'default';

describe("an instance identity's writes of PostgresBackup status", () => {
  let env: AdmissionEnv;
  /** Cluster db's instance db-i-0, as its agent authenticates. */
  let agent: KubeClient;
  const backups = (client: KubeClient) => client.resource<KubeObject>(API_VERSION, BACKUP_KIND);
  const attempt = (write: () => Promise<unknown>) =>
    write().then(
      () => 'allowed',
      (e: unknown) => (e instanceof ApiError ? `${e.statusCode}: ${e.message}` : `not an API error: ${e}`),
    );
  const forge = (name: string, dryRun = false) =>
    backups(agent).patchStatus(
      name,
      { status: { phase: 'Succeeded', label: '20991231-000000F', completedAt: new Date().toISOString() } },
      { namespace: NS, type: 'merge', dryRun },
    );

  before(async () => {
    env = await startAdmissionEnv([PostgresBackupResource]);
    const apply = (o: Record<string, unknown>) =>
      env.client.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test', force: true });
    for (const object of instanceBackupStatusPolicies()) await apply(object);
    // The ServiceAccount admission plugin wants `default` to exist (no controllers run here).
    await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } });
    agent = await instanceClient(env.cp, env.client, 'db', 'db-i-0');
    for (const [name, cluster] of [
      ['db-full', 'db'],
      ['other-full', 'other'],
    ] as const)
      await backups(env.client).create({
        apiVersion: API_VERSION,
        kind: BACKUP_KIND,
        metadata: { name, namespace: NS },
        spec: { cluster, repoName: 'repo1', type: 'full' },
      } as KubeObject);
    // The policy takes effect once the API server has seen it and its binding, and compiled them;
    // a dry run goes through admission without writing.
    await waitFor(
      'the backup status policy to be in force',
      async () => {
        const outcome = await attempt(() => forge('other-full', true));
        if (!outcome.startsWith('403')) throw new Error(outcome);
        return outcome;
      },
      30_000,
      250,
    );
  });
  after(async () => {
    await agent?.close();
    await env?.stop();
  });

  it("may record a run of its own cluster's backup", async () => {
    assert.equal(await attempt(() => forge('db-full')), 'allowed');
  });

  it("is refused forging another cluster's backup Succeeded, with the policy's words, and the status stays", async () => {
    assert.match(
      await attempt(() => forge('other-full')),
      /^403: .*the instances of cluster db may write the status only of its own PostgresBackups, not of other-full \(spec\.cluster other\)/,
    );
    const stored = (await backups(env.client).get('other-full', { namespace: NS })) as { status?: unknown };
    assert.equal(stored.status, undefined);
  });
});
