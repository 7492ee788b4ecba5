/**
 * Certifies each instance agent's own peer key (operator/tls/peer-certificate-plan.ts decides
 * which) and writes the certificate, with the CA's, on the instance's Pod: the agent reads it
 * there, and the instance admission policy keeps the agent itself from writing it.
 */
import { ignoreNotFound, type KubeClient } from '@kanri/client';
import { type CertificateAuthority, certifyPublicKey } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, peerCommonName, readPodReport } from '../../contract/index.js';
import type { CertificateLifetime } from './certificate-lifetime.js';
import { type PeerCertificatePlan, planPeerCertificates } from './peer-certificate-plan.js';

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
 * next renewal). A Pod gone meanwhile is skipped.
 *
 * @example
 * ```ts
 * const { renewInMs, refused } = await certifyPeers({ client, namespace: 'db', cluster: 'hippo', ca, pods, lifetime });
 * ```
 */
export async function certifyPeers(options: CertifyPeersOptions): Promise<PeerCertificatePlan> {
  const { client, namespace, cluster, ca, lifetime } = options;
  const plan = planPeerCertificates({
    cluster,
    caCertPem: ca.caCertPem,
    renewBeforeDays: lifetime.renewBeforeDays,
    pods: options.pods.map((pod) => {
      const peerKey = readPodReport(pod)?.peerKey;
      const certificate = pod.metadata?.annotations?.[ANNOTATION.peerCertificate];
      return {
        name: pod.metadata?.name ?? '',
        deleting: Boolean(pod.metadata?.deletionTimestamp),
        ...(peerKey ? { peerKey } : {}),
        ...(certificate ? { certificate } : {}),
      };
    }),
  });
  for (const { pod, publicKeyPem, reason } of plan.issue) {
    const certPem = await certifyPublicKey({
      publicKeyPem,
      commonName: peerCommonName(cluster, pod),
      clientAuth: true,
      ca,
      validityDays: lifetime.validityDays,
    });
    const annotations = { [ANNOTATION.peerCertificate]: `${certPem.trimEnd()}\n${ca.caCertPem.trimEnd()}\n` };
    const signal = options.signal ? { signal: options.signal } : {};
    await ignoreNotFound(
      client.resource('v1', 'Pod').patch(pod, { metadata: { annotations } }, { namespace, type: 'merge', ...signal }),
    );
    options.onIssued?.(pod, reason);
  }
  return plan;
}
