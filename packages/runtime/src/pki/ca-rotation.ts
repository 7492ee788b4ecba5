/**
 * When the webhook's CA and its serving certificate are renewed, so that the API server never
 * meets a certificate its `caBundle` does not vouch for. The CA is kept apart from the serving key
 * (its own Secret: a leaked serving Secret cannot mint certificates) and rotated with an overlap:
 * 1. `renewBeforeDays` before the CA ends, a new CA is made and the bundle carries both, while
 *    the serving certificate of the old CA is still served;
 * 2. halfway to the old CA's end, the serving certificate is issued from the new CA, which every
 *    replica's configuration has trusted since step 1;
 * 3. once the old CA has ended, it leaves the bundle.
 * Pure: the caller reads the Secrets, makes what this asks for and writes the result.
 */
import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { servingCertificateProblem } from './serving-cert.js';

const DAY_MS = 86_400_000;

/**
 * The Secret that holds the webhook's CA, apart from the serving certificate's.
 *
 * @example
 * ```ts
 * caSecretName('website-operator-webhook-cert'); // 'website-operator-webhook-cert-ca'
 * ```
 */
export function caSecretName(certificateSecret: string): string {
  return `${certificateSecret}-ca`;
}

/** The CA Secret's content: the CA issuing now, and the one it replaced while that one is still valid. */
export interface StoredCa {
  readonly certPem: string;
  readonly keyPem: string;
  readonly previousCertPem?: string;
}

export interface RotationInput {
  readonly ca: StoredCa | undefined;
  /** The serving certificate stored, if any. */
  readonly serving: { readonly certPem: string; readonly keyPem: string } | undefined;
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
  readonly renewBeforeDays: number;
  readonly now: Date;
}

export interface RotationPlan {
  /** Why a new CA must be made (the current one, if still valid, becomes the previous one). */
  readonly newCa?: string;
  /** The previous CA ended: drop it from the bundle. */
  readonly dropPrevious: boolean;
  /** Why the serving certificate must be issued (from the CA issuing after this plan). */
  readonly issue?: string;
}

const publicKeyDer = (key: KeyObject) =>
  (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' });

const endOf = (pem: string) => Date.parse(new X509Certificate(pem).validTo);

/** Why the CA cannot go on issuing (missing, unreadable, not a CA, not its key's, ending soon), or undefined. */
export function caProblem(ca: StoredCa | undefined, renewBeforeDays: number, now: Date): string | undefined {
  if (!ca) return 'no CA yet';
  try {
    const cert = new X509Certificate(ca.certPem);
    if (!cert.ca) return 'the CA certificate is not a CA';
    if (!publicKeyDer(createPrivateKey(ca.keyPem)).equals(publicKeyDer(cert.publicKey)))
      return 'the CA key does not match its certificate';
    if (endOf(ca.certPem) - now.getTime() < renewBeforeDays * DAY_MS) return `the CA ends ${cert.validTo}`;
  } catch (error) {
    return `the CA is unreadable: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

/**
 * What to renew now.
 *
 * @example
 * ```ts
 * planRotation({ ca: undefined, serving: undefined, dnsNames: ['guard.ops.svc'], ipAddresses: [], renewBeforeDays: 30, now: new Date() });
 * // { newCa: 'no CA yet', dropPrevious: false, issue: 'no serving certificate yet' }
 * ```
 */
export function planRotation(input: RotationInput): RotationPlan {
  const { ca, serving, now, renewBeforeDays } = input;
  const newCa = caProblem(ca, renewBeforeDays, now);
  const previous = newCa ? ca?.certPem : ca?.previousCertPem;
  const previousValid = previous !== undefined && safeEnd(previous) > now.getTime();
  const dropPrevious = !newCa && ca?.previousCertPem !== undefined && !previousValid;
  const check = { dnsNames: [...input.dnsNames], ipAddresses: [...input.ipAddresses], renewBeforeDays, now };
  let issue: string | undefined;
  if (!serving) issue = 'no serving certificate yet';
  else if (newCa && !previousValid) issue = `a new CA: ${newCa}`;
  else {
    // The certificate may come from the CA issuing now or, during the overlap, from the previous one.
    const issuer =
      !newCa && ca && verifies(ca.certPem, serving.certPem) ? ca.certPem : previousValid ? previous : undefined;
    if (!issuer) issue = 'it was not issued by the CA';
    else {
      issue = servingCertificateProblem(
        { caCertPem: issuer, certPem: serving.certPem },
        { ...check, renewBeforeDays: 0 },
      )?.reason;
      // Its own end, with the usual margin; a previous CA's certificate moves over halfway to that CA's end.
      const margin = issuer === previous ? (renewBeforeDays * DAY_MS) / 2 : renewBeforeDays * DAY_MS;
      const end = Math.min(safeEnd(serving.certPem), safeEnd(issuer));
      if (!issue && end - now.getTime() < margin)
        issue = issuer === previous ? 'moving to the new CA before the previous one ends' : 'it ends soon';
    }
  }
  return { ...(newCa ? { newCa } : {}), dropPrevious, ...(issue ? { issue } : {}) };
}

/** The `caBundle`: the CA issuing now, then the previous one while it is valid. */
export function caBundle(ca: StoredCa, now: Date): string {
  const previous = ca.previousCertPem && safeEnd(ca.previousCertPem) > now.getTime() ? ca.previousCertPem : '';
  return `${ca.certPem.trimEnd()}\n${previous}`.trimEnd().concat('\n');
}

function verifies(caPem: string, certPem: string): boolean {
  try {
    return new X509Certificate(certPem).verify(new X509Certificate(caPem).publicKey);
  } catch {
    return false;
  }
}

function safeEnd(pem: string): number {
  try {
    return endOf(pem);
  } catch {
    return 0;
  }
}
