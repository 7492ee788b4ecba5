/**
 * Which pgBackRest certificates a cluster's Pods need (contract/repo-host.ts). Every Pod that
 * talks to another over pgBackRest's TLS server holds one certificate, used both as server
 * certificate (pgBackRest verifies a server by the address it dialled, the Pod IP, so that IP must
 * be a SAN) and as client certificate (common name {@link pgbackrestClientName}, which every
 * server of the cluster authorizes). Pure: the caller reads the Secrets and issues what this
 * names.
 */
import { X509Certificate } from 'node:crypto';
import { servingCertificateProblem } from '@kanri/runtime';
import { PGBACKREST_TLS_KEY, pgbackrestClientName } from '../../contract/index.js';
import { keyProblem, RENEW_BEFORE_DAYS } from '../tls/certificate-checks.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** A Pod that holds, or will hold, a certificate. */
export interface TlsPod {
  readonly name: string;
  /** Absent until the Pod is scheduled and has an address. */
  readonly podIP?: string;
  readonly deleting: boolean;
}

export interface TlsPlanInput {
  readonly cluster: string;
  /** The CA certificate currently issuing (Secret names.pgbackrestCa). */
  readonly caCertPem: string;
  /** The TLS Secret's data, decoded; empty when it does not exist yet. */
  readonly data: Readonly<Record<string, string>>;
  /** Every Pod of the cluster that takes part: the instances and the repo host. */
  readonly pods: readonly TlsPod[];
  readonly now?: Date;
}

export interface TlsIssue {
  readonly pod: string;
  readonly podIP: string;
  /** Why, for the log (never certificate or key material). */
  readonly reason: string;
}

export interface TlsPlan {
  /** Pods to issue a certificate for, now. */
  readonly issue: readonly TlsIssue[];
  /** Keys of Pods that are gone (and keys that belong to no Pod). */
  readonly prune: readonly string[];
  /** `ca.crt` is missing or not the current CA. */
  readonly caOutdated: boolean;
}

/** Why the Pod's certificate must be (re)issued, or undefined when it can stay. */
export function podCertificateProblem(
  input: Pick<TlsPlanInput, 'cluster' | 'caCertPem' | 'data' | 'now'>,
  pod: string,
  podIP: string,
): string | undefined {
  const certPem = input.data[PGBACKREST_TLS_KEY.cert(pod)];
  const keyPem = input.data[PGBACKREST_TLS_KEY.key(pod)];
  if (!certPem || !keyPem) return 'no certificate yet';
  const problem = servingCertificateProblem(
    { caCertPem: input.caCertPem, certPem },
    { ipAddresses: [podIP], renewBeforeDays: RENEW_BEFORE_DAYS, ...(input.now ? { now: input.now } : {}) },
  );
  if (problem) return problem.reason;
  // Readable: servingCertificateProblem parsed it already.
  const leaf = new X509Certificate(certPem);
  if (leaf.subject !== `CN=${pgbackrestClientName(input.cluster)}`) return `its subject is ${leaf.subject}`;
  if (!(leaf.keyUsage ?? []).includes(CLIENT_AUTH)) return 'it does not allow client authentication';
  return keyProblem(leaf, keyPem);
}

/**
 * What to change in the TLS Secret: certificates for Pods that have an address and lack a valid
 * one (missing, unreadable, for another IP or name, from another CA, expiring within
 * {@link RENEW_BEFORE_DAYS}), and the entries of Pods that are gone. A Pod being deleted keeps
 * its certificate (it may still serve) but gets no new one.
 *
 * @example
 * ```ts
 * planTls({ cluster: 'hippo', caCertPem, data: {}, pods: [{ name: 'hippo-repo-host', podIP: '10.0.0.9', deleting: false }] });
 * // { issue: [{ pod: 'hippo-repo-host', podIP: '10.0.0.9', reason: 'no certificate yet' }], prune: [], caOutdated: true }
 * ```
 */
export function planTls(input: TlsPlanInput): TlsPlan {
  const issue: TlsIssue[] = [];
  for (const pod of input.pods) {
    if (!pod.podIP || pod.deleting) continue;
    const reason = podCertificateProblem(input, pod.name, pod.podIP);
    if (reason) issue.push({ pod: pod.name, podIP: pod.podIP, reason });
  }
  const present = new Set(input.pods.flatMap((p) => [PGBACKREST_TLS_KEY.cert(p.name), PGBACKREST_TLS_KEY.key(p.name)]));
  const prune = Object.keys(input.data).filter((key) => key !== PGBACKREST_TLS_KEY.ca && !present.has(key));
  return { issue, prune, caOutdated: input.data[PGBACKREST_TLS_KEY.ca] !== input.caCertPem };
}

/** Whether the plan changes nothing. */
export function tlsPlanIsEmpty(plan: TlsPlan): boolean {
  return plan.issue.length === 0 && plan.prune.length === 0 && !plan.caOutdated;
}

/**
 * The TLS Secret's next data: the current CA, the entries kept, and the certificates just issued.
 *
 * @example
 * ```ts
 * nextTlsData(data, plan, caCertPem, [{ pod: 'hippo-repo-host', certPem, keyPem }]);
 * ```
 */
export function nextTlsData(
  data: Readonly<Record<string, string>>,
  plan: TlsPlan,
  caCertPem: string,
  issued: readonly { readonly pod: string; readonly certPem: string; readonly keyPem: string }[],
): Record<string, string> {
  const next: Record<string, string> = { ...data, [PGBACKREST_TLS_KEY.ca]: caCertPem };
  for (const key of plan.prune) delete next[key];
  for (const { pod, certPem, keyPem } of issued) {
    next[PGBACKREST_TLS_KEY.cert(pod)] = certPem;
    next[PGBACKREST_TLS_KEY.key(pod)] = keyPem;
  }
  return next;
}
