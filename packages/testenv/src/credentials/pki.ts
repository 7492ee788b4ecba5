/** A throwaway PKI for one control plane: a CA, serving and client certificates, and service-account keys, all ECDSA P-256 (fast to generate). */
import 'reflect-metadata'; // @peculiar/x509 resolves its ASN.1 providers through tsyringe, which needs this polyfill.
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
const crypto = webcrypto;
// Node's webcrypto typings and the DOM `Crypto` type x509 declares describe the same object.
x509.cryptoProvider.set(crypto as unknown as Parameters<typeof x509.cryptoProvider.set>[1]);

/** A certificate and its private key, both PEM. */
export interface CertificatePem {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface CertificateRequest {
  /** The subject CN; Kubernetes takes it as the user name. */
  readonly commonName: string;
  /** Subject O entries; Kubernetes takes them as the user's groups. */
  readonly organizations?: readonly string[];
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  readonly usage: 'server' | 'client';
}

export interface CertificateAuthority extends CertificatePem {
  issue(request: CertificateRequest): Promise<CertificatePem>;
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(algorithm, true, ['sign', 'verify']) as Promise<CryptoKeyPair>;
}

/** PEM with the trailing newline tools expect at the end of a file. */
function toPem(der: ArrayBuffer, label: string): string {
  return `${x509.PemConverter.encode(der, label).trimEnd()}\n`;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return toPem(await crypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

async function publicKeyPem(key: CryptoKey): Promise<string> {
  return toPem(await crypto.subtle.exportKey('spki', key), 'PUBLIC KEY');
}

/** A positive random serial: the top bit is cleared so DER does not read it as negative. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  // Back-date an hour so a slightly skewed clock does not reject a fresh certificate.
  const now = Date.now();
  return { notBefore: new Date(now - 3_600_000), notAfter: new Date(now + days * 86_400_000) };
}

function subjectName(commonName: string, organizations: readonly string[] = []): x509.Name {
  // The JSON form avoids escaping problems with group names that hold commas or equals signs.
  const json: x509.JsonName = [{ CN: [commonName] }];
  for (const o of organizations) json.push({ O: [o] });
  return new x509.Name(json);
}

/**
 * Creates a fresh certificate authority that can issue serving and client certificates.
 *
 * @example
 * ```ts
 * const ca = await createCertificateAuthority('kanri-testenv');
 * const admin = await ca.issue({ commonName: 'admin', organizations: ['system:masters'], usage: 'client' });
 * ```
 */
export async function createCertificateAuthority(commonName: string): Promise<CertificateAuthority> {
  const keys = await generateKeys();
  const caName = subjectName(commonName);
  const caCert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: caName,
    issuer: caName,
    ...validity(3650),
    signingAlgorithm: algorithm,
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });

  const issue = async (request: CertificateRequest): Promise<CertificatePem> => {
    const leafKeys = await generateKeys();
    const names: x509.JsonGeneralName[] = [
      ...(request.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
      ...(request.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
    ];
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([
        request.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ];
    if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serialNumber(),
      subject: subjectName(request.commonName, request.organizations),
      issuer: caCert.subject,
      ...validity(365),
      signingAlgorithm: algorithm,
      publicKey: leafKeys.publicKey,
      signingKey: keys.privateKey,
      extensions,
    });
    return { certPem: toPem(cert.rawData, 'CERTIFICATE'), keyPem: await privateKeyPem(leafKeys.privateKey) };
  };

  return { certPem: toPem(caCert.rawData, 'CERTIFICATE'), keyPem: await privateKeyPem(keys.privateKey), issue };
}

/** The key pair kube-apiserver signs service-account tokens with, and that verifiers check them against. */
export async function createServiceAccountKeys(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
  const keys = await generateKeys();
  return { publicKeyPem: await publicKeyPem(keys.publicKey), privateKeyPem: await privateKeyPem(keys.privateKey) };
}
