import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CertificateAuthority, certifyPublicKey, createCertificateAuthority } from '@kanri/runtime';
import { PgBackRestKey } from './pgbackrest-key.js';

describe('PgBackRestKey (issue 37, finding 4: made where it is used)', () => {
  let dir: string;
  let ca: CertificateAuthority;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-pgbackrest-key-'));
    ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const certificate = async (publicKeyPem: string, podIP: string, cn = 'pgbackrest@hippo') => {
    const cert = await certifyPublicKey({ publicKeyPem, ipAddresses: [podIP], commonName: cn, clientAuth: true, ca });
    return `${cert}${ca.caCertPem}`;
  };

  it('keeps its key in the run volume, mode 0600, and finds it again after a restart', async () => {
    const key = PgBackRestKey.kept(join(dir, 'tls'));
    assert.equal((await stat(key.keyFile)).mode & 0o777, 0o600);
    assert.equal(PgBackRestKey.kept(join(dir, 'tls')).publicKeyPem, key.publicKeyPem);
    assert.equal(createPublicKey(await readFile(key.keyFile, 'utf8')).asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.notEqual(PgBackRestKey.kept(join(dir, 'other')).publicKeyPem, key.publicKeyPem, 'one key per Pod');
  });

  it('serves only a certificate of its own key, name and IP, written beside the key', async () => {
    const key = PgBackRestKey.kept(join(dir, 'tls'));
    const other = PgBackRestKey.kept(join(dir, 'other'));
    assert.equal(await key.files(undefined, 'hippo', '10.0.0.5'), undefined);
    assert.match(
      key.problem(await certificate(other.publicKeyPem, '10.0.0.5'), 'hippo', '10.0.0.5') ?? '',
      /another key/,
    );
    assert.match(key.problem(await certificate(key.publicKeyPem, '10.0.0.6'), 'hippo', '10.0.0.5') ?? '', /IP/);
    assert.match(
      key.problem(await certificate(key.publicKeyPem, '10.0.0.5', 'pgbackrest@x'), 'hippo', '10.0.0.5') ?? '',
      /subject/,
    );
    const annotation = await certificate(key.publicKeyPem, '10.0.0.5');
    const files = await key.files(annotation, 'hippo', '10.0.0.5');
    assert.equal(files?.key, key.keyFile);
    assert.equal(await readFile(files?.ca ?? '', 'utf8'), ca.caCertPem);
    assert.ok((await readFile(files?.cert ?? '', 'utf8')).startsWith('-----BEGIN CERTIFICATE-----'));
  });
});
