/**
 * Which instances need a peer certificate (contract/postgres-tls.ts, peerCommonName) for the key
 * their agent reports, and when the next one is due for renewal. Each agent makes its key in
 * memory and reports only the public half; the operator certifies it, from the cluster's CA, on
 * the instance's own Pod. Pure: the caller reads the Pods, issues what this names, and writes it.
 */
import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { servingCertificateProblem } from '@kanri/runtime';
import { peerCommonName, splitPeerCertificate } from '../../contract/index.js';
import { renewalDueInMs } from './certificate-lifetime.js';

/** An instance Pod as this plan reads it. */
export interface PeerPod {
  readonly name: string;
  /** The public key its agent reports (InstanceReport.peerKey), SPKI PEM. */
  readonly peerKey?: string;
  /** Its ANNOTATION.peerCertificate: the certificate, then the CA's, PEM. */
  readonly certificate?: string;
  readonly deleting: boolean;
}

export interface PeerCertificateInput {
  readonly cluster: string;
  /** The cluster's CA certificate (names.postgresCa). */
  readonly caCertPem: string;
  readonly pods: readonly PeerPod[];
  readonly renewBeforeDays: number;
  readonly now?: Date;
}

export interface PeerCertificateIssue {
  readonly pod: string;
  readonly publicKeyPem: string;
  /** Why, for the log. */
  readonly reason: string;
}

export interface PeerCertificatePlan {
  readonly issue: PeerCertificateIssue[];
  /** Pods whose reported key cannot be certified (not an ECDSA P-256 public key), with why. */
  readonly refused: { readonly pod: string; readonly reason: string }[];
  /** When the first certificate kept is due for renewal. */
  readonly renewInMs?: number;
}

/** The reported key, if it is one the CA certifies (ECDSA P-256), else why not. */
export function usableKey(pem: string): KeyObject | string {
  try {
    const key = createPublicKey(pem);
    const curve = key.asymmetricKeyDetails?.namedCurve;
    return key.asymmetricKeyType === 'ec' && curve === 'prime256v1'
      ? key
      : `a ${key.asymmetricKeyType} key, not ECDSA P-256`;
  } catch {
    return 'not a public key';
  }
}

/** Why `pod`'s certificate must be issued for `key`, or undefined. */
function certificateProblem(input: PeerCertificateInput, pod: PeerPod, key: KeyObject): string | undefined {
  const { cert, ca } = splitPeerCertificate(pod.certificate);
  if (!cert) return 'no certificate yet';
  if (ca !== input.caCertPem) return "not issued by the cluster's current CA";
  const problem = servingCertificateProblem(
    { caCertPem: input.caCertPem, certPem: cert },
    { renewBeforeDays: input.renewBeforeDays, ...(input.now ? { now: input.now } : {}) },
  );
  if (problem) return problem.reason;
  const leaf = new X509Certificate(cert);
  if (leaf.subject !== `CN=${peerCommonName(input.cluster, pod.name)}`) return `its subject is ${leaf.subject}`;
  if (!leaf.publicKey.equals(key)) return 'the agent has a new key (it restarted)';
  return undefined;
}

/**
 * The certificates to issue, the keys refused, and the next renewal.
 *
 * @example
 * ```ts
 * planPeerCertificates({ cluster: 'hippo', caCertPem, pods: [{ name: 'hippo-i-0', peerKey, deleting: false }], renewBeforeDays: 30 });
 * // { issue: [{ pod: 'hippo-i-0', publicKeyPem: peerKey, reason: 'no certificate yet' }], refused: [] }
 * ```
 */
export function planPeerCertificates(input: PeerCertificateInput): PeerCertificatePlan {
  const issue: PeerCertificateIssue[] = [];
  const refused: { pod: string; reason: string }[] = [];
  const kept: (string | undefined)[] = [];
  for (const pod of input.pods) {
    if (pod.deleting || !pod.peerKey) continue;
    const key = usableKey(pod.peerKey);
    if (typeof key === 'string') {
      refused.push({ pod: pod.name, reason: key });
      continue;
    }
    const reason = certificateProblem(input, pod, key);
    if (reason) issue.push({ pod: pod.name, publicKeyPem: pod.peerKey, reason });
    else kept.push(new X509Certificate(splitPeerCertificate(pod.certificate).cert as string).validTo);
  }
  const renewInMs = renewalDueInMs(kept, { renewBeforeDays: input.renewBeforeDays }, input.now);
  return { issue, refused, ...(renewInMs !== undefined ? { renewInMs } : {}) };
}
