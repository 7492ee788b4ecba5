import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { PGBACKREST_SOURCE_CONF_DIR } from '../../contract/index.js';
import { resolveCloneSource } from './restore-source.js';

const bare = (global: Record<string, string>) =>
  ({
    metadata: { name: 'reborn', namespace: 'db' },
    spec: {
      dataSource: {
        pgbackrest: {
          stanza: 'db',
          configuration: [{ secret: { name: 's3-creds' } }],
          global,
          repo: { name: 'repo1', s3: { bucket: 'b', endpoint: 'localhost', region: 'us-east-1' } },
        },
      },
    },
  }) as unknown as PostgresCluster;

describe('a clone from a bare pgBackRest repo', () => {
  it('reads files its configuration names where that configuration is mounted (PGO names them in conf.d)', () => {
    const { source, configuration } = resolveCloneSource(
      bare({ 'repo1-path': '/pgbackrest/db/hippo/repo1', 'repo1-storage-ca-file': '/etc/pgbackrest/conf.d/ca.crt' }),
      undefined,
    );
    assert.equal(source?.configDir, PGBACKREST_SOURCE_CONF_DIR);
    assert.equal(source?.global?.['repo1-storage-ca-file'], `${PGBACKREST_SOURCE_CONF_DIR}/ca.crt`);
    assert.equal(source?.global?.['repo1-path'], '/pgbackrest/db/hippo/repo1');
    assert.deepEqual(configuration, [{ secret: { name: 's3-creds' } }]);
  });

  it("defaults the repo path to PGO's", () => {
    assert.equal(resolveCloneSource(bare({}), undefined).source?.global?.['repo1-path'], '/pgbackrest/repo1');
  });
});

describe('a clone from another cluster', () => {
  it('refuses a volume repo, naming the field: only the source’s own Pods can reach its repo host', () => {
    const source = {
      metadata: { name: 'hippo', namespace: 'db' },
      spec: { backups: { pgbackrest: { repos: [{ name: 'repo2', volume: { volumeClaimSpec: {} } }] } } },
    } as unknown as PostgresCluster;
    const clone = {
      metadata: { name: 'copy', namespace: 'db' },
      spec: { dataSource: { postgresCluster: { clusterName: 'hippo', repoName: 'repo2' } } },
    } as unknown as PostgresCluster;
    const { source: resolved, problem } = resolveCloneSource(clone, source);
    assert.equal(resolved, undefined);
    assert.match(
      problem ?? '',
      /^spec\.dataSource\.postgresCluster\.repoName: repo2 of PostgresCluster hippo is a volume repo/,
    );
  });
});
