import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { caBundle, caProblem, planRotation } from './ca-rotation.js';
import { createCertificateAuthority, createServingCertificate } from './serving-cert.js';

const DAY = 86_400_000;
const names = { dnsNames: ['guard.ops.svc'], ipAddresses: [] as string[] };
const at = (days: number) => new Date(Date.now() + days * DAY);
const stored = (ca: { caCertPem: string; caKeyPem: string }, previousCertPem?: string) => ({
  certPem: ca.caCertPem,
  keyPem: ca.caKeyPem,
  ...(previousCertPem ? { previousCertPem } : {}),
});

describe('the webhook CA rotation', () => {
  it('makes a CA and a certificate at first, and then nothing while both are far from their end', async () => {
    assert.deepEqual(
      planRotation({ ca: undefined, serving: undefined, ...names, renewBeforeDays: 30, now: new Date() }),
      {
        newCa: 'no CA yet',
        dropPrevious: false,
        issue: 'no serving certificate yet',
      },
    );
    const ca = await createCertificateAuthority();
    const serving = await createServingCertificate({ ...names, ca });
    assert.deepEqual(planRotation({ ca: stored(ca), serving, ...names, renewBeforeDays: 30, now: new Date() }), {
      dropPrevious: false,
    });
  });

  it('rotates with an overlap: new CA in the bundle first, the certificate moves halfway, the old CA leaves at its end', async () => {
    const old = await createCertificateAuthority({ validityDays: 100 });
    const serving = await createServingCertificate({ ...names, ca: old, validityDays: 365 });
    // 80 days on, 20 days left of the old CA (< 30): a new CA, but the certificate stays for now.
    const phase1 = planRotation({ ca: stored(old), serving, ...names, renewBeforeDays: 30, now: at(80) });
    assert.match(phase1.newCa ?? '', /^the CA ends/);
    assert.equal(phase1.issue, undefined, 'the old CA is in the bundle still: its certificate is served on');

    const fresh = await createCertificateAuthority();
    const rotated = stored(fresh, old.caCertPem);
    const bundle = caBundle(rotated, at(80));
    assert.equal((bundle.match(/BEGIN CERTIFICATE/g) ?? []).length, 2, 'the bundle trusts both');
    assert.ok(bundle.startsWith(fresh.caCertPem.trimEnd()), 'the issuing CA first');

    // 90 days on, 10 days left (< 15, half the margin): the certificate moves to the new CA.
    const phase2 = planRotation({ ca: rotated, serving, ...names, renewBeforeDays: 30, now: at(90) });
    assert.equal(phase2.newCa, undefined);
    assert.equal(phase2.issue, 'moving to the new CA before the previous one ends');
    const moved = await createServingCertificate({ ...names, ca: fresh });
    assert.deepEqual(planRotation({ ca: rotated, serving: moved, ...names, renewBeforeDays: 30, now: at(90) }), {
      dropPrevious: false,
    });

    // After the old CA's end: it leaves the bundle.
    const phase3 = planRotation({ ca: rotated, serving: moved, ...names, renewBeforeDays: 30, now: at(101) });
    assert.equal(phase3.dropPrevious, true);
    assert.equal((caBundle(rotated, at(101)).match(/BEGIN CERTIFICATE/g) ?? []).length, 1);
  });

  it('reissues a certificate lacking a name or from a CA it does not know, and refuses a CA whose key is not its own', async () => {
    const ca = await createCertificateAuthority();
    const stranger = await createCertificateAuthority();
    const narrow = await createServingCertificate({ dnsNames: ['other.ops.svc'], ca });
    assert.equal(
      planRotation({ ca: stored(ca), serving: narrow, ...names, renewBeforeDays: 30, now: new Date() }).issue,
      'it lacks the name guard.ops.svc',
    );
    const foreign = await createServingCertificate({ ...names, ca: stranger });
    assert.equal(
      planRotation({ ca: stored(ca), serving: foreign, ...names, renewBeforeDays: 30, now: new Date() }).issue,
      'it was not issued by the CA',
    );
    assert.equal(
      caProblem({ certPem: ca.caCertPem, keyPem: stranger.caKeyPem }, 30, new Date()),
      'the CA key does not match its certificate',
    );
    assert.ok(new X509Certificate(ca.caCertPem).ca);
  });
});
