import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NotFoundError } from '@kanri/client';
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { API_VERSION, BACKUP_KIND, LABEL } from '../contract/index.js';
import { guardOwnership } from './ownership-guard.js';

const cluster = { metadata: { name: 'x-pgbackrest', namespace: 'db', uid: 'uid-xp' } } as PostgresCluster;
const theirs = (kind: string, name: string) => ({
  apiVersion: 'v1',
  kind,
  metadata: {
    name,
    namespace: 'db',
    labels: { [LABEL.cluster]: 'x' },
    ownerReferences: [{ apiVersion: API_VERSION, kind: 'PostgresCluster', name: 'x', uid: 'uid-x', controller: true }],
  },
});
const ours = (kind: string, name: string) => ({
  apiVersion: 'v1',
  kind,
  metadata: { name, namespace: 'db', labels: { [LABEL.cluster]: 'x-pgbackrest' } },
});

/** A context over a fake cache and API server that records the writes it lets through. */
function fakeContext(cached: KubeObject[], live: KubeObject[] = []) {
  const writes: string[] = [];
  const find = (list: KubeObject[], kind: string, name: string) =>
    list.find((o) => o.kind === kind && o.metadata?.name === name);
  const given = {
    log: { warn: () => undefined, info: () => undefined },
    signal: new AbortController().signal,
    get: (_: string, kind: string, name: string) => find(cached, kind, name),
    client: {
      resource: (_: string, kind: string) => ({
        get: async (name: string) => {
          const o = find(live, kind, name);
          if (!o) throw new NotFoundError(404, { reason: 'NotFound' }, { method: 'GET', path: name });
          return o;
        },
      }),
    },
    apply: async (o: KubeObject) => {
      writes.push(`apply ${o.kind} ${o.metadata?.name}`);
      return o;
    },
    create: async (o: KubeObject) => {
      writes.push(`create ${o.kind} ${o.metadata?.name}`);
      return o;
    },
    applyMetadata: async (o: KubeObject) => {
      writes.push(`label ${o.kind} ${o.metadata?.name}`);
    },
  } as unknown as ReconcileContext<PostgresCluster>;
  return { given, writes };
}

describe('the ownership guard around a reconcile', () => {
  it("writes the cluster's own objects and new ones, and refuses another cluster's, recording whose", async () => {
    const { given, writes } = fakeContext([
      theirs('Secret', 'x-pgbackrest-ca'),
      ours('Secret', 'x-pgbackrest-superuser'),
    ]);
    const { ctx, foreign } = guardOwnership(given, cluster);
    await ctx.apply(ours('Secret', 'x-pgbackrest-superuser'));
    await ctx.apply(ours('Secret', 'x-pgbackrest-replication'));
    await ctx.apply(ours('Secret', 'x-pgbackrest-ca'));
    assert.equal(await ctx.create(ours('Secret', 'x-pgbackrest-ca')), undefined);
    await ctx.applyMetadata(ours('Secret', 'x-pgbackrest-ca'), { labels: { a: 'b' } });
    assert.deepEqual(writes, ['apply Secret x-pgbackrest-superuser', 'apply Secret x-pgbackrest-replication']);
    assert.deepEqual(foreign, [{ kind: 'Secret', name: 'x-pgbackrest-ca', owner: 'PostgresCluster x (uid uid-x)' }]);
  });

  it('asks the API server for what the label-filtered cache cannot hold (an unlabelled Secret)', async () => {
    const planted = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x-pgbackrest-superuser', namespace: 'db' } };
    const { given, writes } = fakeContext([], [planted]);
    const { ctx, foreign } = guardOwnership(given, cluster);
    await ctx.apply(ours('Secret', 'x-pgbackrest-superuser'));
    assert.deepEqual(writes, []);
    assert.match(foreign[0]?.owner ?? '', /no controller, and no label/);
  });

  it('creates no Pod once an object was refused (Pods mount Secrets and volumes by name), and leaves PostgresBackups alone', async () => {
    const { given, writes } = fakeContext([theirs('PersistentVolumeClaim', 'x-pgbackrest-i-0-pgdata')]);
    const { ctx, foreign } = guardOwnership(given, cluster);
    await ctx.create(ours('Pod', 'x-pgbackrest-i-1'));
    await ctx.create(ours('PersistentVolumeClaim', 'x-pgbackrest-i-0-pgdata'));
    await ctx.create(ours('Pod', 'x-pgbackrest-i-0'));
    const backup = { ...theirs('x', 'x-pgbackrest-manual-1'), apiVersion: API_VERSION, kind: BACKUP_KIND };
    await ctx.applyMetadata(backup, { labels: { [LABEL.cluster]: 'x-pgbackrest' } });
    assert.deepEqual(writes, ['create Pod x-pgbackrest-i-1', `label ${BACKUP_KIND} x-pgbackrest-manual-1`]);
    assert.equal(foreign.length, 1);
  });
});
