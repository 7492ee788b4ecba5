/** Who the primary is: the holder of the cluster's leader Lease, and where its Pod is. */
import { type KubeClient, NotFoundError } from '@kanri/client';
import { ANNOTATION, type InstanceReport, names } from '../contract.js';

export interface LeaderInfo {
  /** The holder's Pod name; undefined when there is no Lease or nobody holds it. */
  readonly holder: string | undefined;
  /** The holder Pod's IP, when it has one. */
  readonly podIP: string | undefined;
  /** The holder's last reported LSN (from its status annotation), for the replicas' lag. */
  readonly lsn: string | undefined;
  /** The holder last reported itself ready. */
  readonly ready: boolean;
}

/** Reads the Lease (no Pod lookup): whether it exists, and its holder if anyone holds it. */
export async function readLease(
  client: KubeClient,
  namespace: string,
  cluster: string,
  signal?: AbortSignal,
): Promise<{ exists: boolean; holder: string | undefined }> {
  try {
    const lease = await client
      .resource('coordination.k8s.io/v1', 'Lease')
      .get(names.leaderLease(cluster), { namespace, signal });
    return { exists: true, holder: lease.spec?.holderIdentity || undefined };
  } catch (error) {
    if (error instanceof NotFoundError) return { exists: false, holder: undefined };
    throw error;
  }
}

/**
 * Reads the Lease and then the holder's Pod.
 *
 * @example
 * ```ts
 * const { holder, podIP } = await lookupLeader(client, 'db', 'pg');
 * ```
 */
export async function lookupLeader(
  client: KubeClient,
  namespace: string,
  cluster: string,
  signal?: AbortSignal,
): Promise<LeaderInfo> {
  const { holder } = await readLease(client, namespace, cluster, signal);
  if (!holder) return { holder: undefined, podIP: undefined, lsn: undefined, ready: false };
  try {
    const pod = await client.resource('v1', 'Pod').get(holder, { namespace, signal });
    const report = parseReport(pod.metadata?.annotations);
    return { holder, podIP: pod.status?.podIP || undefined, lsn: report?.receivedLsn, ready: report?.ready === true };
  } catch (error) {
    if (error instanceof NotFoundError) return { holder, podIP: undefined, lsn: undefined, ready: false };
    throw error;
  }
}

function parseReport(annotations: Record<string, string> | undefined): Partial<InstanceReport> | undefined {
  const raw = annotations?.[ANNOTATION.status];
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as Partial<InstanceReport>;
  } catch {
    return undefined;
  }
}
