import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { grantsRepoReader, REPO_READERS_ANNOTATION } from '../../contract/index.js';
import { withOutcome } from '../step-outcome.js';
import { recordRepoPaths, resolveRepoPaths } from './repo-grants.js';
import { foreignRepoPath, normalRepoPath, planRepoPaths } from './repo-paths.js';
import { resolveCloneSource } from './restore-source.js';

const s3 = { bucket: 'b', endpoint: 'e', region: 'r' };
const spec = (global?: Record<string, string>) => ({
  repos: [
    { name: 'repo1', s3 },
    { name: 'repo2', volume: {} },
    { name: 'repo3', s3 },
  ],
  ...(global ? { global } : {}),
});
const plan = (over: Partial<Parameters<typeof planRepoPaths>[0]> = {}) =>
  planRepoPaths({
    namespace: 'db',
    name: 'hippo',
    uid: 'u-1',
    spec: spec(),
    recorded: undefined,
    established: false,
    ...over,
  });

describe('repo paths (issue 37, finding 12: namespaces sharing credentials never share a stanza)', () => {
  it('puts a new cluster’s repos under its namespace, name and UID; a volume repo is its mount', () => {
    assert.deepEqual(plan(), {
      paths: { repo1: '/pgbackrest/db/hippo-u-1/repo1', repo3: '/pgbackrest/db/hippo-u-1/repo3' },
      foreign: [],
      refused: [],
    });
  });

  it('never moves a repo: an existing cluster keeps the path it used, a recorded path stays', () => {
    assert.deepEqual(plan({ established: true }).paths, {
      repo1: '/pgbackrest/db/hippo/repo1',
      repo3: '/pgbackrest/db/hippo/repo3',
    });
    const recorded = { repo1: '/pgbackrest/db/hippo/repo1' };
    // A repo added after the upgrade is new: the new default.
    assert.deepEqual(plan({ established: true, recorded }).paths, {
      repo1: '/pgbackrest/db/hippo/repo1',
      repo3: '/pgbackrest/db/hippo-u-1/repo3',
    });
    assert.equal(plan({ recorded: { repo1: '/kept' } }).paths.repo1, '/kept');
  });

  it('lets the user’s global.repoN-path win, normalised, unless it lies in another namespace’s part of the tree', () => {
    const mine = plan({ spec: spec({ 'repo1-path': '/team//backups/./x/' }) });
    assert.equal(mine.paths.repo1, '/team/backups/x');
    const theirs = plan({ spec: spec({ 'repo1-path': '/pgbackrest/other/../prod/pay-u-9/repo1' }) });
    assert.equal(theirs.paths.repo1, undefined);
    assert.deepEqual(theirs.foreign, [
      { repo: 'repo1', path: '/pgbackrest/prod/pay-u-9/repo1', owner: { namespace: 'prod', directory: 'pay-u-9' } },
    ]);
    assert.deepEqual(plan({ spec: spec({ 'repo1-path': 'relative' }) }).refused, [
      { repo: 'repo1', reason: 'global.repo1-path relative is not an absolute path' },
    ]);
  });

  it('tells whose part of the tree a path is in', () => {
    assert.deepEqual(foreignRepoPath('/pgbackrest/b/hippo-1/repo1', 'a'), { namespace: 'b', directory: 'hippo-1' });
    assert.equal(foreignRepoPath('/pgbackrest/a/hippo-1/repo1', 'a'), undefined);
    assert.equal(foreignRepoPath('/pgbackrest/repo1', 'a'), undefined, 'PGO’s default is nobody’s');
    assert.equal(normalRepoPath('x/y'), undefined);
    assert.ok(grantsRepoReader(' a/copy ,b/*', 'b', 'anything'));
    assert.ok(grantsRepoReader('a/copy', 'a', 'copy'));
    assert.ok(!grantsRepoReader('a/copy', 'a', 'other'));
    assert.ok(!grantsRepoReader(undefined, 'a', 'copy'));
  });

  it('uses another namespace’s path only with its owner’s grant, and says what is missing', () => {
    const owner = (annotations: Record<string, string> = {}) =>
      ({ metadata: { name: 'pay', namespace: 'prod', uid: 'u-9', annotations } }) as PostgresCluster;
    const cluster = {
      metadata: { name: 'copy', namespace: 'dev', uid: 'u-2' },
      spec: { backups: { pgbackrest: spec({ 'repo1-path': '/pgbackrest/prod/pay-u-9/repo1' }) } },
    } as unknown as PostgresCluster;
    const ctx = (clusters: PostgresCluster[]) => ({ list: <T>() => clusters as unknown as T[] });
    const refused = resolveRepoPaths(cluster, ctx([owner()]));
    assert.equal(refused.paths.repo1, undefined, 'not used');
    assert.match(
      refused.problems[0] ?? '',
      /PostgresCluster prod\/pay; .*postgres\.kanri\.dev\/repo-readers names dev\/copy/,
    );
    const granted = resolveRepoPaths(cluster, ctx([owner({ [REPO_READERS_ANNOTATION]: 'dev/copy' })]));
    assert.equal(granted.paths.repo1, '/pgbackrest/prod/pay-u-9/repo1');
    assert.deepEqual(granted.problems, []);
    assert.match(resolveRepoPaths(cluster, ctx([])).problems[0] ?? '', /no PostgresCluster there owns it/);

    const status = withOutcome({}, recordRepoPaths(cluster, refused, undefined));
    assert.deepEqual(status.pgbackrest?.repoPaths, { repo3: '/pgbackrest/dev/copy-u-2/repo3' });
    const condition = status.conditions?.find((c) => c.type === 'RepoPathsGranted');
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'GrantMissing');
  });

  it('a clone of a cluster reads where that cluster recorded its repo, and waits while it has not', () => {
    const source = {
      metadata: { name: 'hippo', namespace: 'db' },
      spec: { backups: { pgbackrest: { repos: [{ name: 'repo1', s3 }] } } },
    } as unknown as PostgresCluster;
    const clone = {
      metadata: { name: 'copy', namespace: 'db' },
      spec: { dataSource: { postgresCluster: { clusterName: 'hippo', repoName: 'repo1' } } },
    } as unknown as PostgresCluster;
    assert.match(resolveCloneSource(clone, source).problem ?? '', /has not recorded where repo1 keeps its stanza/);
    const recorded = { ...source, status: { pgbackrest: { repoPaths: { repo1: '/pgbackrest/db/hippo-u-1/repo1' } } } };
    assert.equal(
      resolveCloneSource(clone, recorded as PostgresCluster).source?.repoPath,
      '/pgbackrest/db/hippo-u-1/repo1',
    );
  });
});
