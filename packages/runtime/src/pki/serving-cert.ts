/**
 * A self-signed CA and a serving certificate for the webhook server, ECDSA P-256, in memory.
 *
 * The CA lives ten years and only the serving certificate (a year) is renewed, from the same CA,
 * so the `caBundle` the API server trusts stays valid across renewals. `@peculiar/x509` is loaded
 * on first use only: it costs ~18 MiB and ~200 ms, which operators without webhooks never pay.
 * Checking a certificate uses Node's own `X509Certificate`.
 */
import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

type X509 = typeof import('@peculiar/x509');
type CryptoKey = webcrypto.CryptoKey;
const subtle = webcrypto.subtle;
const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

let loading: Promise<X509> | undefined;

function loadX509(): Promise<X509> {
  loading ??= (async () => {
    await import('reflect-metadata'); // @peculiar/x509 resolves its ASN.1 providers through tsyringe, which needs it.
    const x509 = await import('@peculiar/x509');
    // Node's webcrypto typings and the DOM `Crypto` type x509 declares describe the same object.
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[1]);
    return x509;
  })();
  return loading;
}

/** A CA and a serving certificate it issued, all PEM. `caCertPem` is what goes into a webhook's `caBundle`. */
export interface ServingCertificate {
  readonly caCertPem: string;
  readonly caKeyPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

export interface ServingCertificateRequest {
  /** Subject alternative names, e.g. `serviceDnsNames('guard', 'ops')`. */
  readonly dnsNames?: readonly string[];
  /** IP subject alternative names, e.g. `127.0.0.1` for a webhook the API server calls by URL. */
  readonly ipAddresses?: readonly string[];
  /** Default 365. */
  readonly validityDays?: number;
  /** Issue from this CA instead of creating one, so a renewal keeps the `caBundle`. */
  readonly ca?: { readonly caCertPem: string; readonly caKeyPem: string };
  /** The subject's common name. Default: the first DNS name, else the first IP. */
  readonly commonName?: string;
  /**
   * Also allow the certificate as a TLS client's (extended key usage clientAuth beside
   * serverAuth), for peers that authenticate each other with one certificate each (pgBackRest).
   */
  readonly clientAuth?: boolean;
}

/** A CA to issue from, PEM. */
export interface CertificateAuthority {
  readonly caCertPem: string;
  readonly caKeyPem: string;
}

export interface CertificateAuthorityRequest {
  /** Default `kanri-webhook-ca`. */
  readonly commonName?: string;
  /** Default 3650. */
  readonly validityDays?: number;
}

/**
 * The names a Service answers to inside the cluster; the API server calls `<name>.<namespace>.svc`.
 *
 * @example
 * ```ts
 * serviceDnsNames('guard', 'ops'); // ['guard', 'guard.ops', 'guard.ops.svc', 'guard.ops.svc.cluster.local']
 * ```
 */
export function serviceDnsNames(name: string, namespace: string): string[] {
  return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
}

/** Splits host names into DNS and IP subject alternative names. */
export function subjectAltNames(hosts: readonly string[]): { dnsNames: string[]; ipAddresses: string[] } {
  const unique = [...new Set(hosts.map((h) => h.replace(/^\[|\]$/g, '')))];
  return { dnsNames: unique.filter((h) => isIP(h) === 0), ipAddresses: unique.filter((h) => isIP(h) !== 0) };
}

function toPem(der: ArrayBuffer, label: string, x509: X509): string {
  return `${x509.PemConverter.encode(der, label).trimEnd()}\n`;
}

function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // positive in DER
  return bytes.toString('hex');
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  // Back-dated an hour so an API server with a slightly skewed clock accepts a fresh certificate.
  const now = Date.now();
  return { notBefore: new Date(now - 3_600_000), notAfter: new Date(now + days * 86_400_000) };
}

async function createCa(
  x509: X509,
  request: CertificateAuthorityRequest = {},
): Promise<{ cert: InstanceType<X509['X509Certificate']>; key: CryptoKey }> {
  const keys = (await subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const name = new x509.Name([{ CN: [request.commonName ?? 'kanri-webhook-ca'] }]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: name,
    issuer: name,
    ...validity(request.validityDays ?? 3650),
    signingAlgorithm: algorithm,
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, key: keys.privateKey };
}

/**
 * Creates a CA alone, for a caller that keeps it and issues certificates from it later
 * (`createServingCertificate({ ca })`), one per peer.
 *
 * @example
 * ```ts
 * const ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
 * const pod = await createServingCertificate({ ipAddresses: ['10.0.0.7'], commonName: 'pgbackrest@hippo', clientAuth: true, ca });
 * ```
 */
export async function createCertificateAuthority(
  request: CertificateAuthorityRequest = {},
): Promise<CertificateAuthority> {
  const x509 = await loadX509();
  const ca = await createCa(x509, request);
  return {
    caCertPem: toPem(ca.cert.rawData, 'CERTIFICATE', x509),
    caKeyPem: toPem(await subtle.exportKey('pkcs8', ca.key), 'PRIVATE KEY', x509),
  };
}

/** A certificate for `publicKey` from `ca`, with the request's names and usages. */
async function issue(
  x509: X509,
  request: ServingCertificateRequest,
  ca: { cert: InstanceType<X509['X509Certificate']>; key: CryptoKey },
  publicKey: CryptoKey,
): Promise<InstanceType<X509['X509Certificate']>> {
  const dnsNames = request.dnsNames ?? [];
  const ipAddresses = request.ipAddresses ?? [];
  return x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: new x509.Name([{ CN: [request.commonName ?? dnsNames[0] ?? ipAddresses[0] ?? 'kanri-webhook'] }]),
    issuer: ca.cert.subject,
    ...validity(request.validityDays ?? 365),
    signingAlgorithm: algorithm,
    publicKey,
    signingKey: ca.key,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        ...(request.clientAuth ? [x509.ExtendedKeyUsage.clientAuth] : []),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
      ...(dnsNames.length + ipAddresses.length > 0
        ? [
            new x509.SubjectAlternativeNameExtension([
              ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
              ...ipAddresses.map((value) => ({ type: 'ip' as const, value })),
            ]),
          ]
        : []),
    ],
  });
}

async function importCa(x509: X509, ca: CertificateAuthority) {
  const der = x509.PemConverter.decodeFirst(ca.caKeyPem);
  const key = await subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
  return { cert: new x509.X509Certificate(ca.caCertPem), key };
}

/**
 * A certificate from `ca` for a public key whose private half stays with its holder (an instance
 * agent that made its key in memory and published only the public half): the CA's holder never
 * sees the key. `publicKeyPem` is SPKI PEM of an ECDSA P-256 key.
 *
 * @example
 * ```ts
 * const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
 * const certPem = await certifyPublicKey({ publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(), commonName: 'peer@hippo/hippo-1', clientAuth: true, ca });
 * ```
 */
export async function certifyPublicKey(
  request: Omit<ServingCertificateRequest, 'ca'> & { readonly publicKeyPem: string; readonly ca: CertificateAuthority },
): Promise<string> {
  const x509 = await loadX509();
  const publicKey = await subtle.importKey(
    'spki',
    x509.PemConverter.decodeFirst(request.publicKeyPem),
    { name: 'ECDSA', namedCurve: 'P-256' },
    true,
    ['verify'],
  );
  const cert = await issue(x509, request, await importCa(x509, request.ca), publicKey);
  return toPem(cert.rawData, 'CERTIFICATE', x509);
}

/**
 * Creates a CA (or reuses `request.ca`) and a serving certificate for the given names.
 *
 * @example
 * ```ts
 * const cert = await createServingCertificate({ dnsNames: serviceDnsNames('website-operator-webhook', 'ops') });
 * // https.createServer({ cert: cert.certPem, key: cert.keyPem }); caBundle: base64(cert.caCertPem)
 * ```
 */
export async function createServingCertificate(request: ServingCertificateRequest): Promise<ServingCertificate> {
  const x509 = await loadX509();
  const dnsNames = request.dnsNames ?? [];
  const ipAddresses = request.ipAddresses ?? [];
  if (dnsNames.length + ipAddresses.length === 0) throw new Error('a serving certificate needs a DNS name or an IP');
  let ca: { cert: InstanceType<X509['X509Certificate']>; key: CryptoKey };
  let caKeyPem: string;
  if (request.ca) {
    ca = await importCa(x509, request.ca);
    caKeyPem = request.ca.caKeyPem;
  } else {
    ca = await createCa(x509);
    caKeyPem = toPem(await subtle.exportKey('pkcs8', ca.key), 'PRIVATE KEY', x509);
  }
  const keys = (await subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await issue(x509, request, ca, keys.publicKey);
  return {
    caCertPem: toPem(ca.cert.rawData, 'CERTIFICATE', x509),
    caKeyPem,
    certPem: toPem(cert.rawData, 'CERTIFICATE', x509),
    keyPem: toPem(await subtle.exportKey('pkcs8', keys.privateKey), 'PRIVATE KEY', x509),
  };
}

export interface RenewalCheck {
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** Renew when fewer days than this remain. Default 30. */
  readonly renewBeforeDays?: number;
  readonly now?: Date;
}

/** Why a certificate must be replaced, and whether its CA can issue the replacement (so the `caBundle` stays). */
export interface CertificateProblem {
  readonly reason: string;
  readonly keepCa: boolean;
}

/**
 * What is wrong with `certificate` (unreadable, not issued by its CA, expiring within
 * `renewBeforeDays`, or missing a wanted name), or undefined when it can keep serving. Pure.
 *
 * @example
 * ```ts
 * const problem = servingCertificateProblem(cert, { dnsNames: ['guard.ops.svc'] });
 * if (problem) cert = await createServingCertificate({ dnsNames: ['guard.ops.svc'], ...(problem.keepCa ? { ca: cert } : {}) });
 * ```
 */
export function servingCertificateProblem(
  certificate: Pick<ServingCertificate, 'caCertPem' | 'certPem'>,
  check: RenewalCheck = {},
): CertificateProblem | undefined {
  const now = (check.now ?? new Date()).getTime();
  const margin = (check.renewBeforeDays ?? 30) * 86_400_000;
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(certificate.caCertPem);
  } catch (error) {
    return { reason: `the CA is unreadable: ${error instanceof Error ? error.message : String(error)}`, keepCa: false };
  }
  if (new Date(ca.validTo).getTime() - now < margin) return { reason: `the CA expires ${ca.validTo}`, keepCa: false };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certificate.certPem);
  } catch (error) {
    return {
      reason: `the serving certificate is unreadable: ${error instanceof Error ? error.message : String(error)}`,
      keepCa: true,
    };
  }
  if (!leaf.verify(ca.publicKey)) return { reason: 'the serving certificate was not issued by the CA', keepCa: true };
  if (new Date(leaf.validTo).getTime() - now < margin) return { reason: `it expires ${leaf.validTo}`, keepCa: true };
  for (const name of check.dnsNames ?? []) {
    if (!leaf.checkHost(name, { wildcards: false })) return { reason: `it lacks the name ${name}`, keepCa: true };
  }
  for (const ip of check.ipAddresses ?? []) {
    if (!leaf.checkIP(ip)) return { reason: `it lacks the IP ${ip}`, keepCa: true };
  }
  return undefined;
}

/** The DNS and IP subject alternative names of a PEM certificate; empty when it cannot be read. Pure. */
export function certificateNames(certPem: string): { dnsNames: string[]; ipAddresses: string[] } {
  let san: string | undefined;
  try {
    san = new X509Certificate(certPem).subjectAltName;
  } catch {
    return { dnsNames: [], ipAddresses: [] };
  }
  const entries = (san ?? '').split(', ').filter(Boolean);
  return {
    dnsNames: entries.filter((e) => e.startsWith('DNS:')).map((e) => e.slice(4)),
    ipAddresses: entries.filter((e) => e.startsWith('IP Address:')).map((e) => e.slice(11)),
  };
}
