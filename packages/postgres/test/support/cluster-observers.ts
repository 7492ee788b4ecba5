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
