/**
 * The cluster's status, aggregated from what each agent reports on its own Pod. Pure.
 * A report older than `staleAfterMs` counts as not ready: an agent that stopped reporting
 * cannot be trusted to still be serving.
 */
import { type Condition, setCondition } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster, PostgresClusterStatus } from '../api/postgres-cluster.js';
import { archiveFailing, type InstanceReport, LABEL, ROLE, readPodReport } from '../contract/index.js';

/**
 * The report fields the operator acts on. `readReport` returns only these (and `updatedAt`, read
 * as freshness), so the operator cannot start reading another field without adding it here, and
 * the Pod predicate, which wakes the controller only when one of these changed, stays in step.
 */
export const REPORT_FIELDS_READ = [
  'role',
  'ready',
  'timeline',
  'lagBytes',
  'systemIdentifier',
  'message',
  'backups',
  'restore',
] as const;

/**
 * What of a report's objects wakes the controller at once: the stanza, whether the archive fails,
 * and a restore's result. Archive times move with every segment; the periodic requeue shows them.
 */
export function reportObjectsKey(report: ReportView): string {
  return JSON.stringify([
    report.backups?.stanza,
    archiveFailing(report.backups?.archive),
    report.backups?.walDropped ?? null,
    report.restore ?? null,
  ]);
}

/** What the operator sees of an agent's report. */
export type ReportView = Pick<InstanceReport, (typeof REPORT_FIELDS_READ)[number] | 'updatedAt'>;

/** Agents refresh their report at least every 10 s; three missed refreshes mean it is not serving. */
export const REPORT_STALE_AFTER_MS = 30_000;

/** The operator's view of the agent's report on `pod` (decoded by contract/instance-report.ts). */
export function readReport(pod: Pod): ReportView | undefined {
  const report = readPodReport(pod);
  if (!report) return undefined;
  const view: Partial<Record<keyof ReportView, unknown>> = { updatedAt: report.updatedAt };
  for (const field of REPORT_FIELDS_READ) view[field] = report[field];
  return view as ReportView;
}

/** True while a report is recent enough to be believed at `nowMs`. */
export function isReportFresh(report: ReportView, nowMs: number, staleAfterMs = REPORT_STALE_AFTER_MS): boolean {
  return nowMs - Date.parse(report.updatedAt) < staleAfterMs;
}

export function podReady(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export interface StatusInput {
  readonly cluster: PostgresCluster;
  readonly pods: readonly Pod[];
  readonly desired: number;
  /** Instances planned but not yet created, or being removed: the cluster is still converging. */
  readonly converging: boolean;
  readonly now?: Date;
  readonly staleAfterMs?: number;
}

export function clusterStatus(input: StatusInput): PostgresClusterStatus {
  const { cluster, pods, desired } = input;
  const now = input.now ?? new Date();
  const generation = cluster.metadata?.generation;
  const previous = cluster.status;
  const staleAfter = input.staleAfterMs ?? REPORT_STALE_AFTER_MS;
  const instances = [...pods]
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map((pod) => {
      const report = readReport(pod);
      const fresh = report ? isReportFresh(report, now.getTime(), staleAfter) : false;
      const role = pod.metadata?.labels?.[LABEL.role] ?? report?.role;
      return {
        name: pod.metadata?.name ?? '',
        ...(role ? { role } : {}),
        ready: Boolean(report?.ready && fresh && podReady(pod) && !pod.metadata?.deletionTimestamp),
        ...(report ? { timeline: report.timeline, lagBytes: report.lagBytes } : {}),
        systemIdentifier: report?.systemIdentifier,
      };
    });
  const primary = instances.find((i) => i.role === ROLE.primary && i.ready);
  const readyCount = instances.filter((i) => i.ready).length;
  const systemIdentifier =
    previous?.systemIdentifier ?? instances.find((i) => i.systemIdentifier)?.systemIdentifier ?? undefined;
  const allReady = primary !== undefined && readyCount === desired && !input.converging;
  let conditions: Condition[] | undefined = previous?.conditions as Condition[] | undefined;
  // Without a primary, what the replicas say about failover (waiting for the lease, lag limits) is the news.
  const reasons = primary
    ? []
    : pods.flatMap((pod) => {
        const message = readReport(pod)?.message;
        return message ? [`${pod.metadata?.name}: ${message}`] : [];
      });
  const summary = `${readyCount}/${desired} instances ready${primary ? `, primary ${primary.name}` : ', no primary'}${reasons.length ? `; ${reasons.join('; ')}` : ''}`;
  conditions = setCondition(
    conditions,
    {
      type: 'Ready',
      status: allReady ? 'True' : 'False',
      reason: allReady ? 'AllInstancesReady' : primary ? 'InstancesNotReady' : 'NoPrimary',
      message: summary,
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: 'Progressing',
      status: allReady ? 'False' : 'True',
      reason: allReady ? 'Converged' : input.converging ? 'ScalingInstances' : 'WaitingForInstances',
      message: summary,
      observedGeneration: generation,
    },
    now,
  );
  // Degraded: it worked once (initialised) and is now below what was asked.
  const degraded = systemIdentifier !== undefined && (!primary || readyCount < Math.min(desired, instances.length));
  conditions = setCondition(
    conditions,
    {
      type: 'Degraded',
      status: degraded ? 'True' : 'False',
      reason: degraded ? (primary ? 'InstancesUnavailable' : 'PrimaryUnavailable') : 'AsExpected',
      message: summary,
      observedGeneration: generation,
    },
    now,
  );
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    ...(primary ? { primary: primary.name } : {}),
    instances: instances.map(({ systemIdentifier: _, ...rest }) => rest),
    readyInstances: readyCount,
    desiredInstances: desired,
    ...(systemIdentifier ? { systemIdentifier } : {}),
  } as PostgresClusterStatus;
}
