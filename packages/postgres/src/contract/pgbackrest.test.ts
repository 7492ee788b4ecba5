import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildPgBackRestConf,
  buildPgBackRestServerConf,
  repoOptionsHash,
  repoReachable,
  triggerValue,
  unsupportedRepo,
} from './pgbackrest.js';

const paths = {
  pgPath: '/pgdata/pgdata',
  socketPath: '/run/postgresql',
  port: 5432,
  spoolPath: '/pgdata/pgbackrest-spool',
  logPath: '/run/postgresql/pgbackrest/log',
  lockPath: '/run/postgresql/pgbackrest/lock',
};

// The repo block of the seed's PGO example, as the builder receives it.
const seedS3 = { bucket: 'my-backups', endpoint: 's3.ap-northeast-1.amazonaws.com', region: 'ap-northeast-1' };
const seedRepo = { name: 'repo1', s3: seedS3 };
const seedRepos = [
  {
    name: 'repo1',
    s3: { bucket: 'my-backups', endpoint: 's3.ap-northeast-1.amazonaws.com', region: 'ap-northeast-1' },
  },
];

describe('buildPgBackRestConf', () => {
  it("turns the seed example's repo into pgBackRest's S3 options, the path the operator decided, and async archiving", () => {
    const { text, options } = buildPgBackRestConf({
      storedAt: { repo1: '/pgbackrest/default/my-db-1f0e/repo1' },
      spec: { repos: seedRepos },
      paths,
    });
    assert.equal(options['repo1-type'], 's3');
    assert.equal(options['repo1-s3-bucket'], 'my-backups');
    assert.equal(options['repo1-s3-endpoint'], 's3.ap-northeast-1.amazonaws.com');
    assert.equal(options['repo1-s3-region'], 'ap-northeast-1');
    assert.equal(options['repo1-path'], '/pgbackrest/default/my-db-1f0e/repo1');
    assert.equal(options['archive-async'], 'y');
    assert.equal(options['compress-type'], 'lz4');
    assert.equal(options['spool-path'], '/pgdata/pgbackrest-spool');
    assert.equal(options['pg1-path'], '/pgdata/pgdata');
    assert.match(text, /^\[global\]$/m);
    assert.match(text, /^\[db\]\npg1-path=\/pgdata\/pgdata$/m);
    // No credentials: they come from the mounted s3.conf.
    assert.doesNotMatch(text, /s3-key/);
  });

  it('lets global options win over defaults but never over the paths the agent owns or the operator decided', () => {
    const { options } = buildPgBackRestConf({
      storedAt: { repo1: '/pgbackrest/ns/c-1f0e/repo1' },
      spec: {
        repos: seedRepos,
        global: {
          'repo1-path': '/shared/c',
          'repo1-retention-full': '2',
          'pg1-path': '/elsewhere',
          'start-fast': 'n',
          'compress-type': 'zst',
        },
      },
      paths,
    });
    // The operator folds global.repo1-path into what it records (operator/backups/repo-paths.ts).
    assert.equal(options['repo1-path'], '/pgbackrest/ns/c-1f0e/repo1');
    assert.equal(options['repo1-retention-full'], '2');
    assert.equal(options['start-fast'], 'n');
    assert.equal(options['compress-type'], 'zst');
    assert.equal(options['pg1-path'], '/pgdata/pgdata');
  });

  it('resolves container paths in option values (a CA file in conf.d) where they live', () => {
    const { options } = buildPgBackRestConf({
      storedAt: { repo1: '/p' },
      spec: { repos: seedRepos, global: { 'repo1-storage-ca-file': '/etc/pgbackrest/conf.d/ca.crt' } },
      paths,
      resolvePath: (p) => p.replace('/etc/pgbackrest/conf.d', '/tmp/pod/conf'),
    });
    assert.equal(options['repo1-storage-ca-file'], '/tmp/pod/conf/ca.crt');
  });

  it('hashes only the repo options: a new bucket means a new stanza, a new log level does not', () => {
    const base = buildPgBackRestConf({ storedAt: { repo1: '/p' }, spec: { repos: seedRepos }, paths }).options;
    const otherBucket = buildPgBackRestConf({
      storedAt: { repo1: '/p' },
      spec: { repos: [{ name: 'repo1', s3: { ...seedS3, bucket: 'other' } }] },
      paths,
    }).options;
    assert.notEqual(repoOptionsHash(base), repoOptionsHash(otherBucket));
    assert.equal(repoOptionsHash(base), repoOptionsHash({ ...base, 'log-level-stderr': 'info' }));
  });

  it('gives a repo whose path is not decided yet no option at all: pgBackRest would use its shared default (issue 37, finding 12)', () => {
    const { text, options } = buildPgBackRestConf({
      storedAt: {},
      spec: { repos: seedRepos, global: { 'repo1-retention-full': '2', 'repo1-path': '/mine' } },
      paths,
    });
    assert.deepEqual(
      Object.keys(options).filter((k) => k.startsWith('repo1-')),
      [],
      text,
    );
    assert.equal(repoReachable(seedRepo, options), false);
  });
});

describe('triggers and repos', () => {
  it("accepts PGO's annotation spelling as an alias, Kanri's first", () => {
    assert.equal(triggerValue({ 'postgres-operator.crunchydata.com/pgbackrest-backup': 'a' }, 'backup'), 'a');
    assert.equal(
      triggerValue(
        { 'postgres-operator.crunchydata.com/pgbackrest-restore': 'a', 'postgres.kanri.dev/pgbackrest-restore': 'b' },
        'restore',
      ),
      'b',
    );
    assert.equal(triggerValue({}, 'backup'), undefined);
  });

  it('names gcs and azure repos unsupported, s3 and volume supported', () => {
    assert.match(unsupportedRepo({ name: 'repo2', gcs: { bucket: 'b' } }) ?? '', /repo2: gcs/);
    assert.match(unsupportedRepo({ name: 'repo3', azure: { container: 'c' } }) ?? '', /azure/);
    assert.equal(unsupportedRepo(seedRepo), undefined);
    assert.equal(unsupportedRepo({ name: 'repo2', volume: {} }), undefined);
  });
});

describe('volume repos through the repo host', () => {
  const tls = { ca: '/run/tls/ca.crt', cert: '/run/tls/tls.crt', key: '/run/tls/tls.key' };
  const volume = { name: 'repo2', volume: { volumeClaimSpec: {} } };
  const spec = {
    repos: [seedRepo, volume],
    global: { 'repo2-path': '/mine', 'repo2-host': 'evil', 'tls-server-auth': 'x=db' },
  };

  it('on an instance: reaches the repo over TLS with its own certificate, and passes no repo path', () => {
    const { options } = buildPgBackRestConf({
      storedAt: { repo1: '/p' },
      spec,
      paths,
      volume: { repoHost: { address: '10.0.0.9', config: '/run/repo/server.conf' }, tls },
    });
    assert.equal(options['repo2-host'], '10.0.0.9');
    assert.equal(options['repo2-host-type'], 'tls');
    assert.equal(options['repo2-host-port'], '8432');
    assert.equal(options['repo2-host-cert-file'], '/run/tls/tls.crt');
    assert.equal(options['repo2-host-config'], '/run/repo/server.conf');
    // pgBackRest would pass a path to the remote, overriding the repo host's mount.
    assert.equal(options['repo2-path'], undefined);
    assert.equal(options['tls-server-auth'], undefined, 'the servers are the agent’s');
    assert.equal(options['repo1-type'], 's3', 'the s3 repo is untouched');
    assert.equal(repoReachable(volume, options), true);
  });

  it('without the repo host known yet: the volume repo is unreachable, not pointed anywhere', () => {
    const { options } = buildPgBackRestConf({ storedAt: { repo1: '/p' }, spec, paths, volume: { tls } });
    assert.equal(options['repo2-host'], undefined);
    assert.equal(repoReachable(volume, options), false);
    assert.equal(repoReachable(seedRepo, options), true);
  });

  it('on the repo host: the repo is its mount, and the primary is reached through its own server', () => {
    const { text, options } = buildPgBackRestConf({
      storedAt: { repo1: '/p' },
      spec,
      paths,
      volume: { repoPaths: { repo2: '/pgbackrest/repo2' }, tls },
      pgHost: {
        address: '10.0.0.5',
        config: '/run/pg/server.conf',
        pgPath: '/pgdata/pgdata',
        socketPath: '/run/pg',
        port: 5432,
      },
    });
    assert.equal(options['repo2-path'], '/pgbackrest/repo2', 'the mount, never the user’s path');
    assert.equal(options['repo2-host'], undefined);
    assert.match(text, /^\[db\]\npg1-host=10\.0\.0\.5$/m);
    assert.equal(options['pg1-host-type'], 'tls');
    assert.equal(options['pg1-host-config'], '/run/pg/server.conf');
    assert.equal(options['pg1-socket-path'], '/run/pg');
  });

  it('on a clone: reads the source’s volume repo as gcs through the clone port, never as the user’s global says (issue 37, finding 4)', () => {
    const { options } = buildPgBackRestConf({
      storedAt: {},
      spec: {
        repos: [volume],
        global: {
          'repo2-type': 'posix',
          'repo2-gcs-endpoint': 'evil:443',
          'repo2-storage-verify-tls': 'n',
          'repo2-cipher-pass': 'p',
        },
      },
      paths,
      volume: { gateway: { address: '10.0.0.9', caFile: '/run/source/ca.crt', token: 't0ken' } },
    });
    assert.equal(options['repo2-type'], 'gcs');
    assert.equal(options['repo2-gcs-bucket'], 'repo2');
    assert.equal(options['repo2-gcs-endpoint'], '10.0.0.9:8433');
    assert.equal(options['repo2-gcs-key-type'], 'token');
    assert.equal(options['repo2-gcs-key'], 'Bearer t0ken');
    assert.equal(options['repo2-storage-ca-file'], '/run/source/ca.crt');
    assert.equal(options['repo2-storage-verify-tls'], 'y');
    assert.equal(options['repo2-path'], '/');
    assert.equal(options['repo2-host'], undefined, 'never the source’s pgBackRest server');
    assert.equal(options['repo2-cipher-pass'], 'p', 'the source’s other settings still apply');
    assert.equal(repoReachable(volume, options), true);
  });

  it('a server listens on the Pod IP with the Pod certificate and admits only the cluster’s common name', () => {
    const text = buildPgBackRestServerConf({
      cluster: 'hippo',
      address: '10.0.0.5',
      tls,
      logPath: '/run/log',
      lockPath: '/run/lock',
      pg: { path: '/pgdata/pgdata', socketPath: '/run/pg', port: 5432 },
    });
    assert.match(text, /^tls-server-address=10\.0\.0\.5$/m);
    assert.match(text, /^tls-server-auth=pgbackrest@hippo=db$/m);
    assert.match(text, /^tls-server-ca-file=\/run\/tls\/ca\.crt$/m);
    assert.match(text, /^\[db\]\npg1-path=\/pgdata\/pgdata$/m);
  });
});
