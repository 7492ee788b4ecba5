import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { CONFIG_KEY } from '../../contract/index.js';
import { tlsSecretFixture } from '../tls-secret-fixture.js';
import { decodeTlsSecret, readOperatorConfig, readPostgresTls, startBlockedBy } from './material-plan.js';

const CONFIG_MAP = { what: 'ConfigMap hippo-config', known: true };
const SECRET = { what: 'Secret hippo-postgres-tls', known: true };

describe("the cluster's configuration: a ConfigMap gone or half there is never 'no rules'", () => {
  it('takes a whole ConfigMap', () => {
    const data = { [CONFIG_KEY.parameters]: "work_mem = '4MB'\n", [CONFIG_KEY.hba]: 'host all postgres all reject\n' };
    assert.deepEqual(readOperatorConfig(data, CONFIG_MAP), {
      value: { parameters: "work_mem = '4MB'\n", hba: 'host all postgres all reject\n' },
    });
    // Empty parameters are parameters: the operator writes the key even with none.
    assert.ok('value' in readOperatorConfig({ ...data, [CONFIG_KEY.parameters]: '' }, CONFIG_MAP));
  });

  it('says a deleted ConfigMap does not exist, and one not listed yet is not known, never that it was deleted', () => {
    assert.deepEqual(readOperatorConfig(undefined, CONFIG_MAP), { missing: 'ConfigMap hippo-config does not exist' });
    assert.deepEqual(readOperatorConfig(undefined, { ...CONFIG_MAP, known: false }), {
      missing: 'ConfigMap hippo-config is not known yet (the API server has not answered)',
    });
  });

  it('refuses a ConfigMap that lacks pg_hba.conf or the parameters, naming the key', () => {
    assert.deepEqual(readOperatorConfig({ [CONFIG_KEY.parameters]: '' }, CONFIG_MAP), {
      missing: 'ConfigMap hippo-config lacks pg_hba.conf',
    });
    assert.deepEqual(readOperatorConfig({}, CONFIG_MAP), {
      missing: 'ConfigMap hippo-config lacks postgresql.conf and pg_hba.conf',
    });
  });
});

describe("the cluster's TLS material: only whole and consistent, else what was served stays", () => {
  let whole: Record<string, string>;
  let otherKey: string;
  const base64 = (text: string) => Buffer.from(text).toString('base64');

  before(async () => {
    ({ data: whole, strayKey: otherKey } = await tlsSecretFixture('hippo'));
  });

  it('uses a whole Secret whose certificates are for their keys', () => {
    const read = readPostgresTls(decodeTlsSecret(whole), SECRET);
    assert.ok('value' in read, JSON.stringify(read));
    assert.match(read.value.serverCert, /BEGIN CERTIFICATE/);
    assert.match(read.value.serverKey, /PRIVATE KEY/);
  });

  it('does not use a deleted Secret, an emptied one, or one whose certificate keys were removed (the rotation step)', () => {
    assert.deepEqual(readPostgresTls(undefined, SECRET), { missing: 'Secret hippo-postgres-tls does not exist' });
    assert.deepEqual(readPostgresTls(undefined, { ...SECRET, known: false }), {
      missing: 'Secret hippo-postgres-tls is not known yet (the API server has not answered)',
    });
    assert.deepEqual(readPostgresTls(decodeTlsSecret({}), SECRET), {
      missing: 'Secret hippo-postgres-tls holds no TLS material',
    });
    const { 'tls.crt': _cert, 'tls.key': _key, ...rotating } = whole;
    assert.deepEqual(readPostgresTls(decodeTlsSecret(rotating), SECRET), {
      missing: 'Secret hippo-postgres-tls lacks tls.crt, tls.key',
    });
  });

  it('does not use a certificate with the key of another, nor one that does not parse', () => {
    const mixed = readPostgresTls(decodeTlsSecret({ ...whole, 'tls.key': base64(otherKey) }), SECRET);
    assert.deepEqual(mixed, {
      missing: 'Secret hippo-postgres-tls: tls.crt and tls.key are not a pair (the certificate is for another key)',
    });
    const garbage = readPostgresTls(decodeTlsSecret({ ...whole, 'replication.crt': base64('not a pem') }), SECRET);
    assert.ok('missing' in garbage);
    assert.match(garbage.missing, /replication\.crt and replication\.key do not parse/);
  });
});

describe('the start: postgres never starts with weaker rules, nor on the network without TLS', () => {
  it('starts once the configuration and the TLS material are there', () => {
    assert.equal(startBlockedBy({ config: undefined, tls: undefined, tlsOptional: false }), undefined);
  });

  it('waits for a missing ConfigMap or TLS Secret, saying which and why', () => {
    assert.equal(
      startBlockedBy({ config: 'ConfigMap hippo-config does not exist', tls: undefined, tlsOptional: false }),
      "waiting for the operator: ConfigMap hippo-config does not exist: postgres does not start without the cluster's pg_hba.conf",
    );
    assert.equal(
      startBlockedBy({ config: undefined, tls: 'Secret hippo-postgres-tls does not exist', tlsOptional: false }),
      'waiting for the operator: Secret hippo-postgres-tls does not exist: postgres does not start without TLS',
    );
    const both = startBlockedBy({ config: 'a', tls: 'b', tlsOptional: false }) ?? '';
    assert.match(both, /a: .*; b: /);
  });

  it('lets only an agent outside the operator (ENV.tlsOptional) start without TLS, and never without the configuration', () => {
    assert.equal(startBlockedBy({ config: undefined, tls: 'no TLS material yet', tlsOptional: true }), undefined);
    assert.match(startBlockedBy({ config: 'x', tls: undefined, tlsOptional: true }) ?? '', /pg_hba\.conf/);
  });
});
