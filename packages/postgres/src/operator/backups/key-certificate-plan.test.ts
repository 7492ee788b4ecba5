import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { type CertificateAuthority, certifyPublicKey, createCertificateAuthority } from '@kanri/runtime';
import { type KeyPod, planKeyCertificates, podsOnSharedSecret } from './key-certificate-plan.js';

const cluster = 'hippo';
const CN = 'pgbackrest@hippo';
const newKey = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
const keyA = newKey();
const keyB = newKey();

/** The annotation the operator writes: the certificate, then the CA's. */
async function annotation(
  publicKeyPem: string,
  podIP: string,
  options: { ca?: CertificateAuthority; cn?: string; clientAuth?: boolean; days?: number } = {},
) {
  const issuer = options.ca ?? ca;
  const cert = await certifyPublicKey({
    publicKeyPem,
    ipAddresses: [podIP],
    commonName: options.cn ?? CN,
    clientAuth: options.clientAuth ?? true,
    ca: issuer,
    validityDays: options.days ?? 365,
  });
  return `${cert.trimEnd()}\n${issuer.caCertPem.trimEnd()}\n`;
}

const plan = (pods: KeyPod[], now?: Date) =>
  planKeyCertificates({ cluster, caCertPem: ca.caCertPem, pods, ...(now ? { now } : {}) });

describe('planKeyCertificates (issue 37, finding 4: one key per Pod, made in the Pod)', () => {
  before(async () => {
    ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
    otherCa = await createCertificateAuthority({ commonName: 'other' });
  });

  it('certifies the key each Pod published, for its IP, and nothing for a Pod without key, IP, or being deleted', () => {
    const { issue, refused } = plan([
      { name: 'hippo-repo-host', podIP: '10.0.0.9', deleting: false, publicKeyPem: keyA },
      { name: 'hippo-i-0', podIP: '10.0.0.5', deleting: false, publicKeyPem: keyB },
      { name: 'hippo-i-1', podIP: '10.0.0.6', deleting: false },
      { name: 'hippo-i-2', deleting: false, publicKeyPem: keyA },
      { name: 'hippo-i-3', podIP: '10.0.0.7', deleting: true, publicKeyPem: keyA },
    ]);
    assert.deepEqual(issue, [
      { pod: 'hippo-repo-host', podIP: '10.0.0.9', publicKeyPem: keyA, reason: 'no certificate yet' },
      { pod: 'hippo-i-0', podIP: '10.0.0.5', publicKeyPem: keyB, reason: 'no certificate yet' },
    ]);
    assert.deepEqual(refused, []);
  });

  it('keeps a valid certificate, and reissues one for another key, IP, name, CA, or due for renewal', async () => {
    const pod = (certificate: string, publicKeyPem = keyA, podIP = '10.0.0.9'): KeyPod => ({
      name: 'p',
      podIP,
      deleting: false,
      publicKeyPem,
      certificate,
    });
    assert.deepEqual(plan([pod(await annotation(keyA, '10.0.0.9'))]).issue, []);
    const cases: [string, KeyPod, RegExp][] = [
      ['a new key', pod(await annotation(keyA, '10.0.0.9'), keyB), /new key/],
      ['a new IP', pod(await annotation(keyA, '10.0.0.9'), keyA, '10.0.0.10'), /lacks the IP 10.0.0.10/],
      ['another name', pod(await annotation(keyA, '10.0.0.9', { cn: 'pgbackrest@other' })), /subject/],
      ['another CA', pod(await annotation(keyA, '10.0.0.9', { ca: otherCa })), /current CA/],
      ['no client use', pod(await annotation(keyA, '10.0.0.9', { clientAuth: false })), /client authentication/],
      ['ending', pod(await annotation(keyA, '10.0.0.9', { days: 10 })), /expires/],
    ];
    for (const [what, input, reason] of cases) {
      const [issue] = plan([input]).issue;
      assert.match(issue?.reason ?? 'kept', reason, what);
    }
  });

  it('refuses a published key it cannot certify, saying why', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' });
    const { issue, refused } = plan([
      { name: 'a', podIP: '10.0.0.1', deleting: false, publicKeyPem: rsa.toString() },
      { name: 'b', podIP: '10.0.0.2', deleting: false, publicKeyPem: 'not a key' },
    ]);
    assert.deepEqual(issue, []);
    assert.deepEqual(refused, [
      { pod: 'a', reason: 'a rsa key, not ECDSA P-256' },
      { pod: 'b', reason: 'not a public key' },
    ]);
  });
});

describe('podsOnSharedSecret: retiring the Secret that held every Pod’s key', () => {
  it('counts the Pods whose agent published no key (it may be an older agent), not those being deleted', () => {
    const pods: KeyPod[] = [
      { name: 'new', podIP: '10.0.0.1', deleting: false, publicKeyPem: keyA },
      { name: 'old', podIP: '10.0.0.2', deleting: false },
      { name: 'starting', deleting: false },
      { name: 'going', podIP: '10.0.0.3', deleting: true },
    ];
    assert.deepEqual(
      podsOnSharedSecret(pods).map((p) => p.name),
      ['old', 'starting'],
    );
    assert.deepEqual(podsOnSharedSecret(pods.filter((p) => p.publicKeyPem || p.deleting)), []);
  });
});
