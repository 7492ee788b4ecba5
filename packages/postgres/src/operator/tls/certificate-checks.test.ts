import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type CertificateAuthority, createCertificateAuthority, createServingCertificate } from '@kanri/runtime';
import { certificateAuthorityProblem, decodeSecretData } from './certificate-checks.js';

let ca: CertificateAuthority;
let otherCa: CertificateAuthority;

before(async () => {
  ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
  otherCa = await createCertificateAuthority();
});

describe('certificateAuthorityProblem', () => {
  it('accepts a CA with its own key, and names what is wrong otherwise', async () => {
    const good = { 'ca.crt': ca.caCertPem, 'ca.key': ca.caKeyPem };
    assert.equal(certificateAuthorityProblem(good), undefined);
    assert.equal(certificateAuthorityProblem({}), 'no CA yet');
    assert.match(certificateAuthorityProblem({ ...good, 'ca.key': otherCa.caKeyPem }) ?? '', /key does not match/);
    assert.match(certificateAuthorityProblem({ ...good, 'ca.crt': 'junk' }) ?? '', /unreadable/);
    const leaf = await createServingCertificate({ ipAddresses: ['10.0.0.1'], ca, validityDays: 365 });
    assert.match(certificateAuthorityProblem({ 'ca.crt': leaf.certPem, 'ca.key': leaf.keyPem }) ?? '', /not a CA/);
    const inTenYears = new Date(Date.now() + 3640 * 86_400_000);
    assert.match(certificateAuthorityProblem(good, inTenYears) ?? '', /expires/);
  });

  it('decodes Secret data', () => {
    assert.deepEqual(decodeSecretData({ 'ca.crt': Buffer.from('pem').toString('base64') }), { 'ca.crt': 'pem' });
    assert.deepEqual(decodeSecretData(undefined), {});
  });
});
