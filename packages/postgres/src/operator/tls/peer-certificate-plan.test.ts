import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { type CertificateAuthority, certifyPublicKey, createCertificateAuthority } from '@kanri/runtime';
import { peerCommonName } from '../../contract/index.js';
import { planPeerCertificates } from './peer-certificate-plan.js';

const publicKey = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

describe('planPeerCertificates', () => {
  let ca: CertificateAuthority;
  let otherCa: CertificateAuthority;
  const lifetime = { renewBeforeDays: 30 };
  const annotation = async (key: string, instance: string, from = ca, days = 365) =>
    `${await certifyPublicKey({ publicKeyPem: key, commonName: peerCommonName('hippo', instance), clientAuth: true, ca: from, validityDays: days })}${from.caCertPem}`;

  before(async () => {
    ca = await createCertificateAuthority({ commonName: 'hippo-ca' });
    otherCa = await createCertificateAuthority({ commonName: 'old-ca' });
  });

  it('certifies a reported key once, and again for a new key, another CA, the wrong name or the end of its life', async () => {
    const key = publicKey();
    const plan = (certificate?: string, peerKey: string | undefined = key) =>
      planPeerCertificates({
        cluster: 'hippo',
        caCertPem: ca.caCertPem,
        renewBeforeDays: lifetime.renewBeforeDays,
        pods: [
          {
            name: 'hippo-i-0',
            deleting: false,
            ...(peerKey ? { peerKey } : {}),
            ...(certificate ? { certificate } : {}),
          },
        ],
      });
    assert.deepEqual(plan().issue, [{ pod: 'hippo-i-0', publicKeyPem: key, reason: 'no certificate yet' }]);
    const current = await annotation(key, 'hippo-i-0');
    const kept = plan(current);
    assert.deepEqual(kept.issue, []);
    assert.equal(Math.round((kept.renewInMs ?? 0) / 86_400_000), 335, 'due 30 days before its end');
    assert.deepEqual(plan(current, undefined).issue, [], 'no key reported: nothing to certify');
    assert.equal(plan(current, publicKey()).issue[0]?.reason, 'the agent has a new key (it restarted)');
    assert.equal(
      plan(await annotation(key, 'hippo-i-0', otherCa)).issue[0]?.reason,
      "not issued by the cluster's current CA",
    );
    assert.equal(plan(await annotation(key, 'hippo-i-1')).issue[0]?.reason, 'its subject is CN=peer@hippo/hippo-i-1');
    assert.match(plan(await annotation(key, 'hippo-i-0', ca, 20)).issue[0]?.reason ?? '', /expires/);
  });

  it('refuses a reported key that is no ECDSA P-256 public key, and skips Pods being deleted', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' });
    const plan = planPeerCertificates({
      cluster: 'hippo',
      caCertPem: ca.caCertPem,
      renewBeforeDays: 30,
      pods: [
        { name: 'a', deleting: false, peerKey: rsa.toString() },
        { name: 'b', deleting: false, peerKey: 'not a key' },
        { name: 'c', deleting: true, peerKey: publicKey() },
      ],
    });
    assert.deepEqual(plan.issue, []);
    assert.deepEqual(plan.refused, [
      { pod: 'a', reason: 'a rsa key, not ECDSA P-256' },
      { pod: 'b', reason: 'not a public key' },
    ]);
  });
});
