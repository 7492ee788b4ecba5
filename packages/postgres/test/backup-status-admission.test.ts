/**
 * Issue 37, finding 7: an instance, and a repo host, writes the status only of its own cluster's
 * PostgresBackups, against a real API server with the instance Role and the repo host's Role
 * (contract/instance-rbac.ts, contract/repo-host-rbac.ts: each grants `patch` on every
 * PostgresBackup's status in the namespace) and the admission policies
 * (contract/admission/instance-backup-policy.ts, contract/admission/repo-host-admission-policy.ts), with the identity
 * each agent has: its ServiceAccount and a token bound to its Pod.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, type KubeClient, type KubeObject } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import { PostgresBackupResource } from '../src/api/postgres-backup.js';
import {
  API_VERSION,
  BACKUP_KIND,
  instanceBackupStatusPolicies,
  repoHostAdmissionPolicies,
} from '../src/contract/index.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';
import { instanceClient, repoHostClient } from './support/instance-identity.js';

const NS = 'default';

describe("an agent identity's writes of PostgresBackup status", () => {
  let env: AdmissionEnv;
  /** Cluster db's instance db-i-0, as its agent authenticates. */
  let agent: KubeClient;
  /** Cluster db's repo host db-repo-host, as its agent authenticates. */
  let repoHost: KubeClient;
  const backups = (client: KubeClient) => client.resource<KubeObject>(API_VERSION, BACKUP_KIND);
  const attempt = (write: () => Promise<unknown>) =>
    write().then(
      () => 'allowed',
      (e: unknown) => (e instanceof ApiError ? `${e.statusCode}: ${e.message}` : `not an API error: ${e}`),
    );
  const forge = (name: string, dryRun = false, as = agent) =>
    backups(as).patchStatus(
      name,
      { status: { phase: 'Succeeded', label: '20991231-000000F', completedAt: new Date().toISOString() } },
      { namespace: NS, type: 'merge', dryRun },
    );

  before(async () => {
    env = await startAdmissionEnv([PostgresBackupResource]);
    const apply = (o: Record<string, unknown>) =>
      env.client.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test', force: true });
    for (const object of [...instanceBackupStatusPolicies(), ...repoHostAdmissionPolicies()]) await apply(object);
    // The ServiceAccount admission plugin wants `default` to exist (no controllers run here).
    await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } });
    agent = await instanceClient(env.cp, env.client, 'db', 'db-i-0');
    repoHost = await repoHostClient(env.cp, env.client, 'db');
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
    for (const [who, as] of [
      ['instance', agent],
      ['repo host', repoHost],
    ] as const)
      await waitFor(
        `the ${who}'s backup status policy to be in force`,
        async () => {
          const outcome = await attempt(() => forge('other-full', true, as));
          if (!outcome.startsWith('403')) throw new Error(outcome);
          return outcome;
        },
        30_000,
        250,
      );
  });
  after(async () => {
    await repoHost?.close();
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

  it("lets the repo host record a run of its own cluster's backup, and refuses it another cluster's (its Role grants every one in the namespace)", async () => {
    assert.equal(await attempt(() => forge('db-full', false, repoHost)), 'allowed');
    assert.match(
      await attempt(() => forge('other-full', false, repoHost)),
      /^403: .*repo-host-backup-status-writes\.postgres\.kanri\.dev.*the repo host of cluster db may write the status only of its own PostgresBackups, not of other-full \(spec\.cluster other\)/,
    );
    const stored = (await backups(env.client).get('other-full', { namespace: NS })) as { status?: unknown };
    assert.equal(stored.status, undefined);
  });
});
