/**
 * The cluster's status, aggregated from what each agent reports on its own Pod. Pure.
 * A report older than `staleAfterMs` counts as not ready: an agent that stopped reporting
 * cannot be trusted to still be serving.
 */
import type { Condition } from '@kanri/api';
import { type ConditionInput, setCondition } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster, PostgresClusterStatus } from '../api/postgres-cluster.js';
import {
  archiveFailing,
  type DatabaseInitSqlRun,
  type InstanceReport,
  LABEL,
  laterInitSqlRun,
  names,
  ROLE,
  readPodReport,
} from '../contract/index.js';

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
  'serverVersion',
  'pendingRestart',
  'controlLimits',
  'restartServed',
  // The primary served the switchover order (switchover-plan.ts).
  'switchoverServed',
  'configHash',
  // A new key (a restarted agent) needs its peer certificate (operator/tls/peer-certificates.ts).
  'peerKey',
  'message',
  'backups',
  'restore',
  'diskFull',
  'users',
  'databaseInitSQL',
  // Auto-grow reads how full each data volume is (instances/volume-resize-plan.ts).
  'dataVolume',
] as const;

/**
 * What of a report's objects wakes the controller at once: the stanza, whether the archive fails,
 * a restore's result, and what restarts wait for. Archive times move with every segment; the periodic requeue shows them.
 */
export function reportObjectsKey(report: ReportView): string {
  return JSON.stringify([
    report.backups?.stanza,
    archiveFailing(report.backups?.archive),
    report.backups?.walDropped ?? null,
    report.restore ?? null,
    // Restarts are ordered by these (rollout/restart-plan.ts): each change is a step.
    report.pendingRestart ?? null,
    report.controlLimits ?? null,
    // Removed users are listed in the status, and a dropped one's Secret deleted (removed-users.ts).
    report.users ?? null,
    // Copied to status.databaseInitSQL(Run), which the next primary reads.
    report.databaseInitSQL ?? null,
    // A grown filesystem ends a resize step; fullness in 5% steps can start an auto-grow.
    report.dataVolume?.sizeBytes ?? null,
    report.dataVolume && report.dataVolume.sizeBytes > 0
      ? Math.floor((1 - report.dataVolume.availableBytes / report.dataVolume.sizeBytes) * 20)
      : null,
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

/**
 * Whether the cluster's data exists: its status holds a system identifier, or an instance reports
 * one (before the status caught up).
 *
 * @example
 * ```ts
 * isInitialised(cluster, instancePods); // false for a cluster whose first instance has not started
 * ```
 */
export function isInitialised(cluster: PostgresCluster, instancePods: readonly Pod[]): boolean {
  return cluster.status?.systemIdentifier !== undefined || instancePods.some((p) => readReport(p)?.systemIdentifier);
}

/** True while a report is recent enough to be believed at `nowMs`. */
export function isReportFresh(report: ReportView, nowMs: number, staleAfterMs = REPORT_STALE_AFTER_MS): boolean {
  return nowMs - Date.parse(report.updatedAt) < staleAfterMs;
}

export function podReady(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Why an instance is not ready, from its report or else its Pod; undefined when it is ready. */
function notReadyReason(pod: Pod, nowMs: number, staleAfterMs: number): string | undefined {
  if (pod.metadata?.deletionTimestamp) return 'being deleted';
  const report = readPodReport(pod);
  if (!report) {
    const waiting = pod.status?.containerStatuses?.find((c) => c.state?.waiting)?.state?.waiting;
    const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    const phase = pod.status?.phase ?? 'Pending';
    const why = unscheduled
      ? `, ${unscheduled.reason ?? 'not scheduled'}: ${(unscheduled.message ?? '').slice(0, 160)}`
      : waiting?.reason
        ? `, ${waiting.reason}`
        : '';
    return `no report yet (Pod ${phase}${why})`;
  }
  if (report.message) return report.message;
  if (!isReportFresh(report, nowMs, staleAfterMs))
    return `last report ${Math.round((nowMs - Date.parse(report.updatedAt)) / 1000)} s old`;
  if (!podReady(pod)) return 'Pod not Ready';
  return report.ready ? undefined : 'not ready';
}

export interface StatusInput {
  readonly cluster: PostgresCluster;
  readonly pods: readonly Pod[];
  readonly desired: number;
  /** Instances planned but not yet created, or being removed: the cluster is still converging. */
  readonly converging: boolean;
  /**
   * The Secrets and ConfigMap the instances serve with (TLS material, pg_hba.conf, parameters)
   * that this pass found missing on an initialised cluster, and created anew.
   */
  readonly recreated?: readonly string[];
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
        ...(report?.serverVersion ? { version: report.serverVersion } : {}),
        ...(report?.dataVolume ? { dataVolume: report.dataVolume } : {}),
        systemIdentifier: report?.systemIdentifier,
      };
    });
  const primary = instances.find((i) => i.role === ROLE.primary && i.ready);
  const readyCount = instances.filter((i) => i.ready).length;
  const systemIdentifier =
    previous?.systemIdentifier ?? instances.find((i) => i.systemIdentifier)?.systemIdentifier ?? undefined;
  const allReady = primary !== undefined && readyCount === desired && !input.converging;
  let conditions: Condition[] | undefined = previous?.conditions;
  // Each instance that is not ready says why, so the condition (and a test that times out on it)
  // names the cause; without a primary, what the replicas say about failover is the news.
  const reasons = pods.flatMap((pod) => {
    const why = notReadyReason(pod, now.getTime(), staleAfter);
    return why ? [`${pod.metadata?.name}: ${why}`] : [];
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
  const version = versionCondition(cluster.spec.postgresVersion, instances);
  conditions = setCondition(conditions, { ...version, observedGeneration: generation }, now);
  const observedVersion = (primary ?? instances.find((i) => i.version))?.version;
  // Any report counts, stale too: an instance whose full volume stopped postgres (and its agent's
  // reports, after a restart) is exactly the one to name.
  const full = pods.flatMap((pod) => {
    const why = readReport(pod)?.diskFull;
    return why && !pod.metadata?.deletionTimestamp ? [`${pod.metadata?.name}: ${why}`] : [];
  });
  conditions = setCondition(
    conditions,
    {
      type: 'DiskFull',
      status: full.length > 0 ? 'True' : 'False',
      reason: full.length > 0 ? 'DataVolumeFull' : 'AsExpected',
      message: full.length > 0 ? full.join('; ') : 'no instance reports a full data volume',
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      ...securityMaterialCondition(cluster.metadata?.name ?? '', input.recreated ?? []),
      observedGeneration: generation,
    },
    now,
  );
  // The primary's last pass over spec.users; without a primary, the last one seen stands.
  const primaryPod = primary && pods.find((pod) => pod.metadata?.name === primary.name);
  const usersReport = primaryPod ? readReport(primaryPod)?.users : undefined;
  const removedUsers = usersReport ? usersReport.removed : previous?.removedUsers;
  const initSql = databaseInitSqlStatus(
    cluster.spec.databaseInitSQL,
    primaryPod ? readReport(primaryPod)?.databaseInitSQL : undefined,
    previous,
  );
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    ...(removedUsers && removedUsers.length > 0 ? { removedUsers } : {}),
    ...initSql,
    // While no instance reports (all stopped for an upgrade, say), what last ran still stands.
    ...(observedVersion || previous?.postgresVersion
      ? { postgresVersion: observedVersion ?? previous?.postgresVersion }
      : {}),
    ...(primary ? { primary: primary.name } : {}),
    instances: instances.map(({ systemIdentifier: _, ...rest }) => rest),
    readyInstances: readyCount,
    desiredInstances: desired,
    ...(systemIdentifier ? { systemIdentifier } : {}),
  };
}

/**
 * `PostgresVersion`: whether every instance that reported runs the major `spec.postgresVersion`
 * asks for. The image decides what runs, so a mismatch (an image of another version in
 * `spec.image`) is stated rather than hidden behind the spec's number.
 */
export function versionCondition(
  wanted: number,
  instances: readonly { readonly name: string; readonly version?: string }[],
): ConditionInput {
  const reported = instances.filter((i) => i.version);
  if (reported.length === 0)
    return {
      type: 'PostgresVersion',
      status: 'Unknown',
      reason: 'NotReported',
      message: 'no instance has reported its server version yet',
    };
  const wrong = reported.filter((i) => Number.parseInt(i.version ?? '', 10) !== wanted);
  if (wrong.length === 0)
    return {
      type: 'PostgresVersion',
      status: 'True',
      reason: 'AsSpecified',
      message: `every reporting instance runs PostgreSQL ${wanted} (${[...new Set(reported.map((i) => i.version))].join(', ')})`,
    };
  return {
    type: 'PostgresVersion',
    status: 'False',
    reason: 'VersionMismatch',
    message: `spec.postgresVersion is ${wanted}, but ${wrong.map((i) => `${i.name} runs ${i.version}`).join(', ')}: the image's binaries decide the version; use an image of ${wanted} or change spec.postgresVersion`,
  };
}

/**
 * `SecurityMaterialMissing`: True for the pass that found the cluster's TLS Secret, its CA or its
 * ConfigMap missing (deleted) and created them anew; False once a pass finds them all. The
 * instances never serve weaker meanwhile: they keep the certificates, pg_hba.conf and parameters
 * they had, and one that starts waits for them (agent/start-gate.ts).
 *
 * @example
 * ```ts
 * securityMaterialCondition('hippo', ['hippo-postgres-tls']).status; // 'True'
 * ```
 */
export function securityMaterialCondition(cluster: string, recreated: readonly string[]): ConditionInput {
  if (recreated.length === 0)
    return {
      type: 'SecurityMaterialMissing',
      status: 'False',
      reason: 'Present',
      message: `${names.postgresTls(cluster)}, ${names.postgresCa(cluster)} and ${names.config(cluster)} exist`,
    };
  const newCa = recreated.includes(names.postgresCa(cluster))
    ? ` A new CA issued every certificate: clients must trust the new ca.crt of ConfigMap ${names.clientCa(cluster)}.`
    : '';
  return {
    type: 'SecurityMaterialMissing',
    status: 'True',
    reason: 'Recreated',
    message: `${recreated.join(', ')} did not exist: created anew. The instances keep serving with the certificates, pg_hba.conf and parameters they had until they load the new ones; an instance that starts meanwhile waits for them.${newCa}`,
  };
}

/**
 * `status.databaseInitSQL` (PGO's: the ConfigMap once its SQL ran) and `databaseInitSQLRun` (the
 * last run, which the next primary reads), from the primary's report and the status before; both
 * go with `spec.databaseInitSQL`, and a run of another ConfigMap or key is forgotten, so setting
 * the field again runs the SQL again, as in PGO.
 */
export function databaseInitSqlStatus(
  wanted: PostgresCluster['spec']['databaseInitSQL'],
  reported: DatabaseInitSqlRun | undefined,
  previous: PostgresClusterStatus | undefined,
): Pick<PostgresClusterStatus, 'databaseInitSQL' | 'databaseInitSQLRun'> {
  if (!wanted) return {};
  const matches = (run: DatabaseInitSqlRun | undefined) =>
    run && run.configMap === wanted.name && run.key === wanted.key ? run : undefined;
  const run = laterInitSqlRun(matches(reported), matches(previous?.databaseInitSQLRun));
  const ran = previous?.databaseInitSQL === wanted.name || run?.result === 'Succeeded';
  return { ...(ran ? { databaseInitSQL: wanted.name } : {}), ...(run ? { databaseInitSQLRun: run } : {}) };
}
