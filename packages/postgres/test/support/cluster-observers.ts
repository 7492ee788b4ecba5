/**
 * Read-only views of a cluster through the Kubernetes API, shared by the README-claim tests: the
 * Events recorded about it, its instance Pods and their data volumes, and the processes its
 * instances run on the process nodes.
 */
import type { KubeClient, KubeObject } from '@kanri/client';
import { type ControlPlane, waitFor } from '@kanri/testenv';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { KIND, LABEL } from '../../src/contract/index.js';

/** The fields of an events.k8s.io/v1 Event the tests look at. */
export interface ClusterEvent {
  readonly type: string;
  readonly reason: string;
  readonly note: string;
  /** How many times it happened: a repeat within minutes bumps the Event's series, not a new Event. */
  readonly count: number;
}

/** When an instance was out of service during a rollout: its old Pod going, to its new one ready. */
export interface Outage {
  readonly pod: string;
  /** When its old Pod was seen deleted or gone (any clock, the same for every outage). */
  readonly from: number;
  /** When its new Pod was first seen ready; undefined if never. */
  readonly to: number | undefined;
}

/**
 * Pairs of outages that overlap: two instances out at once. A rollout that takes instances one at
 * a time has none; one that never saw a replaced instance ready again counts it out to the end.
 *
 * @example
 * overlappingOutages([{ pod: 'a', from: 0, to: 10 }, { pod: 'b', from: 5, to: 20 }]); // ['a and b were out at once (from 5)']
 */
export function overlappingOutages(outages: readonly Outage[]): string[] {
  const found: string[] = [];
  const end = (o: Outage) => o.to ?? Number.POSITIVE_INFINITY;
  for (let i = 0; i < outages.length; i++) {
    for (let j = i + 1; j < outages.length; j++) {
      const [a, b] = [outages[i] as Outage, outages[j] as Outage];
      if (a.from < end(b) && b.from < end(a))
        found.push(`${a.pod} and ${b.pod} were out at once (from ${Math.round(Math.max(a.from, b.from))})`);
    }
  }
  return found;
}

/** How many times Events with `reason` happened, series included. */
export function occurrences(events: readonly ClusterEvent[], reason: string): number {
  return events.filter((e) => e.reason === reason).reduce((n, e) => n + e.count, 0);
}

/** Every Event recorded about the PostgresCluster `cluster` (by the operator or by its agents). */
export async function clusterEvents(client: KubeClient, cluster: string): Promise<ClusterEvent[]> {
  const events = await client
    .resource<KubeObject & Record<string, unknown>>('events.k8s.io/v1', 'Event')
    .list({ namespace: 'default' });
  return events.items
    .filter((e) => {
      const regarding = e.regarding as { kind?: string; name?: string } | undefined;
      return regarding?.kind === KIND && regarding.name === cluster;
    })
    .map((e) => ({
      type: String(e.type),
      reason: String(e.reason),
      note: String(e.note ?? ''),
      count: (e.series as { count?: number } | undefined)?.count ?? 1,
    }));
}

/** Waits for an Event about `cluster` with this reason (and type) whose note matches `note`. */
export function waitForClusterEvent(
  client: KubeClient,
  cluster: string,
  expected: { type: 'Normal' | 'Warning'; reason: string; note?: RegExp },
  timeoutMs = 60_000,
): Promise<ClusterEvent> {
  return waitFor(
    `a ${expected.type} ${expected.reason} Event about ${cluster}${expected.note ? ` matching ${expected.note}` : ''}`,
    async () => {
      const events = await clusterEvents(client, cluster);
      const found = events.find(
        (e) => e.type === expected.type && e.reason === expected.reason && (expected.note?.test(e.note) ?? true),
      );
      // The Events seen so far end up in the timeout's message.
      if (!found)
        throw new Error(`Events so far: ${events.map((e) => `${e.reason}: ${e.note.slice(0, 60)}`).join(' | ')}`);
      return found;
    },
    timeoutMs,
    250,
  );
}

export async function instancePods(client: KubeClient, cluster: string): Promise<Pod[]> {
  return (
    await client.resource<Pod>('v1', 'Pod').list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${cluster}` })
  ).items;
}

export async function dataClaims(client: KubeClient, cluster: string): Promise<PersistentVolumeClaim[]> {
  return (
    await client
      .resource<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim')
      .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${cluster}` })
  ).items;
}

/** The claim a Pod mounts, by volume: an instance's identity is its volume. */
export function claimOf(pod: Pod): string | undefined {
  return pod.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName;
}

/** PIDs of every process the process nodes run for Pods of `cluster` (agents and their postgres). */
export function instancePids(cp: ControlPlane, cluster: string): number[] {
  return cp.processNodes.flatMap((n) => n.containers().flatMap((c) => (c.pod.startsWith(`${cluster}-`) ? c.pids : [])));
}
