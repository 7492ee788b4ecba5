import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildPgBackRestConf,
  buildPgBackRestServerConf,
  confLine,
  PgBackRestConfError,
  type PgBackRestSpec,
} from './pgbackrest.js';
import { quoteConfValue } from './postgres-settings.js';

const paths = {
  pgPath: '/pgdata/pg',
  socketPath: '/run/pg',
  port: 5432,
  spoolPath: '/pgdata/spool',
  logPath: '/run/log',
  lockPath: '/run/lock',
};
const s3 = { bucket: 'b', endpoint: 'e', region: 'r' };
// Where the operator would locate repo1: with no path a repo gets no option at all, so nothing to inject.
const storedAt = { repo1: '/pgbackrest/default/db-1f0e/repo1' };
const conf = (spec: PgBackRestSpec, stanza?: string) =>
  buildPgBackRestConf({ storedAt, spec, paths, ...(stanza ? { stanza } : {}) }).text;

describe('configuration lines: no spec string or annotation writes a line of its own', () => {
  it('writes pgbackrest.conf options as key=value, and refuses a key or value that would start another line', () => {
    assert.equal(confLine('repo1-retention-full', '2'), 'repo1-retention-full=2');
    for (const [key, value] of [
      ['repo1-retention-full', '2\npg1-host=evil.example'],
      ['repo1-retention-full', '2\r'],
      ['repo1-retention-full', 'a\u0000b'],
      ['repo1-retention-full\npg1-host', 'evil.example'],
      ['pg1-host=evil.example\nx', '1'],
      ['[db]', '1'],
      ['#x', '1'],
      [' repo1-path', '/x'],
      ['', '1'],
    ] as const)
      assert.throws(() => confLine(key, value), PgBackRestConfError, JSON.stringify([key, value]));
  });

  it('refuses, rather than writes, a spec whose global, repo or stanza would inject a line', () => {
    const injected: PgBackRestSpec[] = [
      { repos: [{ name: 'repo1', s3 }], global: { 'compress-type': 'zst\npg1-host=evil.example' } },
      { repos: [{ name: 'repo1', s3: { ...s3, endpoint: 'e\nrepo1-host=evil.example' } }] },
      { repos: [{ name: 'repo1', s3: { ...s3, bucket: 'b\n[db]' } }] },
    ];
    for (const spec of injected) assert.throws(() => conf(spec), PgBackRestConfError, JSON.stringify(spec));
    assert.throws(() => conf({ repos: [{ name: 'repo1', s3 }] }, 'db]\n[x'), PgBackRestConfError);
    // Every line of what is written is a section, a comment, blank, or one option.
    const text = conf({ repos: [{ name: 'repo1', s3 }], global: { 'repo1-retention-full': '2' } });
    for (const line of text.split('\n'))
      assert.match(line, /^(\[[A-Za-z0-9._-]+\]|#.*|[a-z0-9-]+=[^\n]*|)$/, JSON.stringify(line));
  });

  it("refuses a server configuration from a Pod annotation's path that would inject a line", () => {
    const tls = { ca: '/t/ca.crt', cert: '/t/tls.crt', key: '/t/tls.key' };
    const input = { cluster: 'db', address: '10.0.0.5', tls, logPath: '/l', lockPath: '/k' };
    assert.match(
      buildPgBackRestServerConf({ ...input, pg: { path: '/pg', socketPath: '/s', port: 5432 } }),
      /pg1-path=\/pg\n/,
    );
    assert.throws(
      () =>
        buildPgBackRestServerConf({ ...input, pg: { path: '/pg\ntls-server-auth=x=*', socketPath: '/s', port: 5432 } }),
      PgBackRestConfError,
    );
    assert.throws(
      () =>
        buildPgBackRestConf({
          storedAt,
          spec: { repos: [{ name: 'repo1', s3 }] },
          paths,
          pgHost: {
            address: '10.0.0.6',
            config: '/conf\nrepo1-path=/evil',
            pgPath: '/pg',
            socketPath: '/s',
            port: 5432,
          },
          volume: { tls },
        }),
      PgBackRestConfError,
    );
  });

  it('quotes postgresql.conf values on one line, with control characters as the escapes postgres reads', () => {
    assert.equal(quoteConfValue("it's"), "'it''s'");
    assert.equal(quoteConfValue('a\\b'), "'a\\\\b'");
    assert.equal(quoteConfValue("1MB'\nrestore_command = 'sh"), "'1MB''\\nrestore_command = ''sh'");
    assert.equal(quoteConfValue('\t\r\b\f'), "'\\t\\r\\b\\f'");
    assert.equal(quoteConfValue('a\u0001\u007f'), "'a\\001\\177'");
    for (let code = 0; code < 0x80; code++)
      assert.doesNotMatch(quoteConfValue(`x${String.fromCharCode(code)}y`), /[\n\r]/, String(code));
  });
});
