import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_SERVER,
  PGBACKREST_SOURCE_CONF_DIR,
} from '../../contract/index.js';
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
    assert.equal(source?.repoPath, '/pgbackrest/db/hippo/repo1');
    assert.deepEqual(configuration, [{ secret: { name: 's3-creds' } }]);
  });

  it("defaults the repo path to PGO's", () => {
    assert.equal(resolveCloneSource(bare({}), undefined).source?.repoPath, '/pgbackrest/repo1');
    assert.equal(
      resolveCloneSource(bare({ 'repo1-path': '/pgbackrest//db/./x/../hippo/repo1/' }), undefined).source?.repoPath,
      '/pgbackrest/db/hippo/repo1',
      'as pgBackRest would reach it',
    );
  });
});

describe('a clone from another cluster', () => {
  const source = {
    metadata: { name: 'hippo', namespace: 'db' },
    spec: { backups: { pgbackrest: { repos: [{ name: 'repo2', volume: { volumeClaimSpec: {} } }] } } },
  } as unknown as PostgresCluster;
  const clone = {
    metadata: { name: 'copy', namespace: 'db' },
    spec: { dataSource: { postgresCluster: { clusterName: 'hippo', repoName: 'repo2' } } },
  } as unknown as PostgresCluster;

  it('waits for the source’s repo host to serve a volume repo, naming the field', () => {
    const { source: resolved, problem } = resolveCloneSource(clone, source, undefined);
    assert.equal(resolved, undefined);
    assert.match(
      problem ?? '',
      /^spec\.dataSource\.postgresCluster\.repoName: repo2 of PostgresCluster hippo is a volume repo, and its repo host hippo-repo-host does not serve yet/,
    );
  });

  it('reads a volume repo through the source’s repo host’s clone port, with the certificate it serves', () => {
    const repoHost = (annotations: Record<string, string>) =>
      ({ metadata: { name: 'hippo-repo-host', annotations }, status: { podIP: '10.0.0.9' } }) as Pod;
    const server = { [ANNOTATION_PGBACKREST_SERVER]: '{"config":"/run/server.conf"}' };
    assert.match(resolveCloneSource(clone, source, repoHost(server)).problem ?? '', /does not serve yet/);
    const certificate = { [ANNOTATION_PGBACKREST_CERTIFICATE]: 'cert+ca' };
    const { source: resolved } = resolveCloneSource(clone, source, repoHost({ ...server, ...certificate }));
    assert.deepEqual(resolved?.gateway, { address: '10.0.0.9', certificate: 'cert+ca' });
    assert.equal(resolved?.cluster, 'hippo');
  });
});
