/**
 * Certifies each instance agent's own peer key (operator/tls/peer-certificate-plan.ts decides
 * which) and writes the certificate, with the CA's, on the instance's Pod: the agent reads it
 * there, and the instance admission policy keeps the agent itself from writing it.
 */
import { ignoreNotFound, type KubeClient, type KubeObject } from '@kanri/client';
import { type CertificateAuthority, certifyPublicKey } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, peerCommonName, readPodReport } from '../../contract/index.js';
import type { CertificateLifetime } from './certificate-lifetime.js';
import { type PeerCertificatePlan, type PeerPod, planPeerCertificates } from './peer-certificate-plan.js';

export interface CertifyPeersOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly cluster: string;
  readonly ca: CertificateAuthority;
  /** The cluster's instance Pods. */
  readonly pods: readonly Pod[];
  readonly lifetime: CertificateLifetime;
  /** Told each certificate issued, with why (never key material). */
  readonly onIssued?: (pod: string, reason: string) => void;
  readonly signal?: AbortSignal;
}

/**
 * Issues what the plan names and writes it on each Pod; returns the plan (its refusals and the
 * next renewal). A Pod gone meanwhile, or already certified, is skipped.
 *
 * @example
 * ```ts
 * const { renewInMs, refused } = await certifyPeers({ client, namespace: 'db', cluster: 'hippo', ca, pods, lifetime });
 * ```
 */
function peerPod(pod: Pod): PeerPod {
  const peerKey = readPodReport(pod)?.peerKey;
  const certificate = pod.metadata?.annotations?.[ANNOTATION.peerCertificate];
  return {
    name: pod.metadata?.name ?? '',
    deleting: Boolean(pod.metadata?.deletionTimestamp),
    ...(peerKey ? { peerKey } : {}),
    ...(certificate ? { certificate } : {}),
  };
}

export async function certifyPeers(options: CertifyPeersOptions): Promise<PeerCertificatePlan> {
  const { client, namespace, cluster, ca, lifetime } = options;
  const planFor = (pods: readonly Pod[]) =>
    planPeerCertificates({
      cluster,
      caCertPem: ca.caCertPem,
      renewBeforeDays: lifetime.renewBeforeDays,
      pods: pods.map(peerPod),
    });
  const plan = planFor(options.pods);
  const signal = options.signal ? { signal: options.signal } : {};
  const pods = client.resource<Pod & KubeObject>('v1', 'Pod');
  for (const { pod, reason } of plan.issue) {
    // The cache may lag this controller's own last write: ask the Pod as the API server has it
    // now, so a certificate just written is not issued again (and the agent's TLS not churned).
    const live = await ignoreNotFound(pods.get(pod, { namespace, ...signal }));
    const still = live && planFor([live]).issue[0];
    if (!still) continue;
    const certPem = await certifyPublicKey({
      publicKeyPem: still.publicKeyPem,
      commonName: peerCommonName(cluster, pod),
      clientAuth: true,
      ca,
      validityDays: lifetime.validityDays,
    });
    const annotations = { [ANNOTATION.peerCertificate]: `${certPem.trimEnd()}\n${ca.caCertPem.trimEnd()}\n` };
    await ignoreNotFound(pods.patch(pod, { metadata: { annotations } }, { namespace, type: 'merge', ...signal }));
    options.onIssued?.(pod, reason);
  }
  return plan;
}
