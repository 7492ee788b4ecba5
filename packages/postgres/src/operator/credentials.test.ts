import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { secrets } from './builders/secrets.js';
import { generatePassword, planCredentials } from './credentials.js';

const cluster = {
  metadata: { name: 'db', namespace: 'apps' },
  spec: {
    users: [
      { name: 'alnum', password: { type: 'AlphaNumeric' } },
      { name: 'ascii', databases: ['shop'], password: { type: 'ASCII' } },
      { name: 'plain' },
    ],
  },
} as unknown as PostgresCluster;

describe('generatePassword', () => {
  it("draws 24 characters of PGO's sets for a type, 32 URL-safe ones without", () => {
    for (let i = 0; i < 50; i++) {
      assert.match(generatePassword('AlphaNumeric'), /^[A-Za-z0-9]{24}$/);
      assert.match(generatePassword('ASCII'), /^[A-Za-z0-9()*+,\-./:;<=>?@[\]^_{|}]{24}$/);
      assert.match(generatePassword(), /^[A-Za-z0-9_-]{32}$/);
    }
  });

  it('uses the punctuation of ASCII (over many draws every class appears)', () => {
    const drawn = Array.from({ length: 200 }, () => generatePassword('ASCII')).join('');
    assert.match(drawn, /[()*+,\-./:;<=>?@[\]^_{|}]/);
    assert.match(drawn, /[0-9]/);
  });
});

describe('planCredentials', () => {
  it("generates a missing user's password of its type, and keeps one a Secret holds whatever the type", () => {
    const types: (string | undefined)[] = [];
    const credentials = planCredentials(cluster, new Map([['ascii', 'kept']]), (type) => {
      types.push(type);
      return `new-${type ?? 'default'}`;
    });
    assert.deepEqual(credentials.users, { alnum: 'new-AlphaNumeric', ascii: 'kept', plain: 'new-default' });
    assert.deepEqual(types.slice(0, 2), ['AlphaNumeric', undefined]);
  });
});

describe("a user's Secret", () => {
  it("holds PGO's jdbc-uri beside the uri, the password and user escaped", () => {
    const [, , , ascii] = secrets(cluster, { superuser: 's', replication: 'r', users: { ascii: 'a&b=c?d' } });
    const data = ascii?.stringData ?? {};
    assert.equal(data['jdbc-uri'], 'jdbc:postgresql://db-primary.apps.svc:5432/shop?password=a%26b%3Dc%3Fd&user=ascii');
    assert.equal(new URL(data['jdbc-uri']?.slice('jdbc:'.length) ?? '').searchParams.get('password'), 'a&b=c?d');
    assert.equal(data.uri, 'postgresql://ascii:a%26b%3Dc%3Fd@db-primary.apps.svc:5432/shop');
  });
});
