import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { createCertificateAuthority, createServiceAccountKeys } from './pki.js';

describe('pki', () => {
  it('issues client certificates signed by the CA, carrying the user name and groups', async () => {
    const ca = await createCertificateAuthority('test-ca');
    const issued = await ca.issue({ commonName: 'alice', organizations: ['devs', 'system:masters'], usage: 'client' });
    const cert = new X509Certificate(issued.certPem);
    const caCert = new X509Certificate(ca.certPem);
    assert.ok(cert.verify(caCert.publicKey), 'signed by the CA');
    assert.ok(cert.checkIssued(caCert));
    assert.match(cert.subject, /CN=alice/);
    assert.match(cert.subject, /O=devs/);
    assert.match(cert.subject, /O=system:masters/);
    assert.equal(cert.ca, false);
    assert.equal(caCert.ca, true);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2'], 'clientAuth only');
    // The private key belongs to the certificate.
    assert.ok(cert.checkPrivateKey(createPrivateKey(issued.keyPem)));
  });

  it('issues serving certificates with the requested DNS and IP names', async () => {
    const ca = await createCertificateAuthority('test-ca');
    const issued = await ca.issue({
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: ['localhost', 'kubernetes.default.svc'],
      ipAddresses: ['127.0.0.1'],
    });
    const cert = new X509Certificate(issued.certPem);
    assert.equal(cert.checkHost('kubernetes.default.svc'), 'kubernetes.default.svc');
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkIP('10.1.2.3'), undefined);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'serverAuth only');
  });

  it('creates a matching service-account key pair', async () => {
    const keys = await createServiceAccountKeys();
    const fromPrivate = createPublicKey(createPrivateKey(keys.privateKeyPem)).export({ type: 'spki', format: 'pem' });
    assert.equal(fromPrivate, keys.publicKeyPem);
  });
});
