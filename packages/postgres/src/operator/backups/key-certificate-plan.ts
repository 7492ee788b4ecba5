/**
 * Which Pods need a pgBackRest certificate for the key their agent published (contract/repo-host.ts,
 * ANNOTATION_PGBACKREST_KEY), and whether the Secret of the older scheme (every Pod's key in
 * names.pgbackrestTls) can go. Each certificate serves both ways: as server certificate (pgBackRest
 * verifies a server by the address it dialled, the Pod IP, so that IP is a SAN) and as client
 * certificate (common name pgbackrestClientName, which every server of the cluster authorizes).
 * Pure: the caller reads the Pods, issues what this names, and writes it on each Pod.
 */
import { type KeyObject, X509Certificate } from 'node:crypto';
import { servingCertificateProblem } from '@kanri/runtime';
import { pgbackrestClientName, splitPeerCertificate } from '../../contract/index.js';
import { RENEW_BEFORE_DAYS } from '../tls/certificate-checks.js';
import { usableKey } from '../tls/peer-certificate-plan.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** A Pod of the cluster's pgBackRest mesh (an instance or the repo host), as this plan reads it. */
export interface KeyPod {
  readonly name: string;
  /** Absent until the Pod is scheduled and has an address. */
  readonly podIP?: string;
  readonly deleting: boolean;
  /** The public key its agent published (SPKI PEM); absent for an agent of the older scheme. */
  readonly publicKeyPem?: string;
  /** Its ANNOTATION_PGBACKREST_CERTIFICATE: the certificate, then the CA's, PEM. */
  readonly certificate?: string;
}

export interface KeyCertificateInput {
  readonly cluster: string;
  /** The CA certificate currently issuing (Secret names.pgbackrestCa). */
  readonly caCertPem: string;
  readonly pods: readonly KeyPod[];
  readonly now?: Date;
}

export interface KeyCertificateIssue {
  readonly pod: string;
  readonly podIP: string;
  readonly publicKeyPem: string;
  /** Why, for the log (never key material). */
  readonly reason: string;
}

export interface KeyCertificatePlan {
  readonly issue: readonly KeyCertificateIssue[];
  /** Pods whose published key cannot be certified (not an ECDSA P-256 public key), with why. */
  readonly refused: readonly { readonly pod: string; readonly reason: string }[];
}

/** The published key, if it is one the CA certifies (ECDSA P-256), else why not. */
export const certifiableKey = usableKey;

/** Why `pod`'s certificate must be issued for `key` and `podIP`, or undefined when it can stay. */
function certificateProblem(
  input: KeyCertificateInput,
  pod: KeyPod,
  podIP: string,
  key: KeyObject,
): string | undefined {
  const { cert, ca } = splitPeerCertificate(pod.certificate);
  if (!cert) return 'no certificate yet';
  if (ca !== input.caCertPem) return "not issued by the cluster's current CA";
  const problem = servingCertificateProblem(
    { caCertPem: input.caCertPem, certPem: cert },
    { ipAddresses: [podIP], renewBeforeDays: RENEW_BEFORE_DAYS, ...(input.now ? { now: input.now } : {}) },
  );
  if (problem) return problem.reason;
  const leaf = new X509Certificate(cert);
  if (leaf.subject !== `CN=${pgbackrestClientName(input.cluster)}`) return `its subject is ${leaf.subject}`;
  if (!(leaf.keyUsage ?? []).includes(CLIENT_AUTH)) return 'it does not allow client authentication';
  if (!leaf.publicKey.equals(key)) return 'the agent has a new key (its Pod restarted)';
  return undefined;
}

/**
 * The certificates to issue: for every Pod with an address and a published key whose certificate
 * is missing, for another key, IP, name or CA, or due for renewal ({@link RENEW_BEFORE_DAYS}). A Pod
 * being deleted gets none.
 *
 * @example
 * ```ts
 * planKeyCertificates({ cluster: 'hippo', caCertPem, pods: [{ name: 'hippo-repo-host', podIP: '10.0.0.9', deleting: false, publicKeyPem }] });
 * // { issue: [{ pod: 'hippo-repo-host', podIP: '10.0.0.9', publicKeyPem, reason: 'no certificate yet' }], refused: [] }
 * ```
 */
export function planKeyCertificates(input: KeyCertificateInput): KeyCertificatePlan {
  const issue: KeyCertificateIssue[] = [];
  const refused: { pod: string; reason: string }[] = [];
  for (const pod of input.pods) {
    if (pod.deleting || !pod.podIP || !pod.publicKeyPem) continue;
    const key = certifiableKey(pod.publicKeyPem);
    if (typeof key === 'string') {
      refused.push({ pod: pod.name, reason: key });
      continue;
    }
    const reason = certificateProblem(input, pod, pod.podIP, key);
    if (reason) issue.push({ pod: pod.name, podIP: pod.podIP, publicKeyPem: pod.publicKeyPem, reason });
  }
  return { issue, refused };
}

/**
 * The Pods still on the older scheme: their agent published no key, so it reads its certificate
 * and key from names.pgbackrestTls. The Secret is kept (and kept current for them) until none is
 * left; a Pod that has not published its key yet counts, since its agent may be an older one.
 *
 * @example
 * ```ts
 * if (podsOnSharedSecret(pods).length === 0) await deleteTheSecret(); // every Pod has its own key
 * ```
 */
export function podsOnSharedSecret(pods: readonly KeyPod[]): KeyPod[] {
  return pods.filter((pod) => !pod.deleting && !pod.publicKeyPem);
}
