/**
 * The InstanceReport the agent writes on its own Pod, built from one observation of postgres, and
 * the rule for when to write it: at once when something that matters changed, otherwise (LSNs
 * moving, time passing) at most every `refreshMs`, so a busy primary does not flood the API.
 */
import { archiveFailing, type InstanceReport, type Role } from '../../contract/index.js';
import { lsnDistance, maxLsn } from './lsn.js';

/** What one status probe of the local postgres returned (undefined fields: postgres did not answer). */
export interface PostgresObservation {
  readonly connected: boolean;
  readonly inRecovery?: boolean;
  readonly systemIdentifier?: string;
  /** `server_version` without its build suffix, e.g. `16.15`. */
  readonly serverVersion?: string;
  readonly timeline?: number;
  /** Primary: pg_current_wal_lsn(). */
  readonly currentLsn?: string | null;
  /** Replica: pg_last_wal_receive_lsn() and pg_last_wal_replay_lsn(). */
  readonly receiveLsn?: string | null;
  readonly replayLsn?: string | null;
  /** pg_stat_wal_receiver.status ('streaming', 'startup', …), null when no receiver runs. */
  readonly receiverStatus?: string | null;
  /** pg_stat_wal_receiver.latest_end_lsn: the primary's WAL end as its sender last said. */
  readonly senderEndLsn?: string | null;
  /** The operator's configuration as postgres has loaded it (CONFIG_HASH_SETTING). */
  readonly configHash?: string;
  /** Some parameter waits for a restart (its details cost another query: asked only then). */
  readonly restartPending?: boolean;
}

export interface ReportInput {
  readonly role: Role;
  /** The primary holds the Lease (a primary without it must not report ready). */
  readonly leading: boolean;
  readonly observation: PostgresObservation;
  /** On replicas: the primary's LSN from its own report, when known. */
  readonly primaryLsn?: string;
  /** Why the agent is not serving yet (bootstrapping, waiting for a primary, fenced, …). */
  readonly phaseMessage?: string;
  readonly now: Date;
  /** Decisions to report (failover, switchover, rejoin, synchronous standbys). */
  readonly decisions?: ReportDecisions;
}

export type ReportDecisions = Pick<
  InstanceReport,
  | 'failover'
  | 'switchover'
  | 'switchoverServed'
  | 'rejoin'
  | 'synchronousStandbys'
  | 'restartServed'
  | 'users'
  | 'databaseInitSQL'
  | 'upgradeCheck'
  | 'upgrade'
>;

const ZERO_LSN = '0/0';

/** Why the instance is not ready, or undefined when it is: serving, and a replica also streaming. */
function notReadyBecause(input: ReportInput): string | undefined {
  if (input.phaseMessage) return input.phaseMessage;
  const problem = servingProblem(input);
  if (problem !== undefined || input.role === 'primary') return problem;
  const status = input.observation.receiverStatus;
  return status === 'streaming' ? undefined : `WAL receiver is ${status ?? 'not running'}`;
}

/**
 * Why the instance cannot take its Services' traffic, or undefined when it can: what `/readyz`
 * answers, so what puts a Pod in a Service's endpoints. Looser than the report's `ready` for
 * replicas, as CloudNativePG's default probe is: a replica whose primary just died still serves
 * (stale) reads, and, more to the point, stays Ready through the failover. The replica promoted
 * then reaches `<cluster>-primary` as soon as its role label changes, instead of waiting out
 * `failureThreshold` probes to turn unready and one more period to turn ready again. The report's
 * `ready` (the cluster's Ready condition and Ready-Instances) still requires streaming.
 *
 * @example
 * ```ts
 * servingProblem({ role: 'replica', leading: false, observation: { connected: true, inRecovery: true } }); // undefined
 * ```
 */
export function servingProblem(input: Pick<ReportInput, 'role' | 'leading' | 'observation'>): string | undefined {
  const { observation: o, role } = input;
  if (!o.connected) return 'postgres is not accepting connections';
  if (role === 'primary') {
    if (o.inRecovery) return 'postgres is still in recovery';
    if (!input.leading) return 'does not hold the leader Lease';
    return undefined;
  }
  if (!o.inRecovery) return 'postgres is not in recovery (not a standby)';
  return undefined;
}

/**
 * The report for one observation.
 *
 * @example
 * ```ts
 * const report = buildReport({ role: 'primary', leading: true, observation, now: new Date() });
 * ```
 */
export function buildReport(input: ReportInput): InstanceReport {
  const { observation: o, role } = input;
  const message = notReadyBecause(input);
  const received = (role === 'primary' ? o.currentLsn : o.receiveLsn) ?? ZERO_LSN;
  const replayed = (role === 'primary' ? o.currentLsn : o.replayLsn) ?? ZERO_LSN;
  const primaryEnd = maxLsn(maxLsn(input.primaryLsn, o.senderEndLsn), received) ?? ZERO_LSN;
  const report: InstanceReport = {
    role,
    ready: message === undefined,
    timeline: o.timeline ?? 0,
    systemIdentifier: o.systemIdentifier ?? '',
    receivedLsn: received,
    replayedLsn: replayed,
    lagBytes: role === 'primary' ? 0 : lsnDistance(replayed, primaryEnd),
    updatedAt: input.now.toISOString(),
    ...(o.serverVersion ? { serverVersion: o.serverVersion } : {}),
  };
  const decisions = Object.fromEntries(
    Object.entries(input.decisions ?? {}).filter(([, value]) => value !== undefined),
  ) as ReportDecisions;
  return message === undefined ? { ...report, ...decisions } : { ...report, message, ...decisions };
}

/** Fields whose change is written at once; the rest (LSNs, lag, time) wait for the refresh period. */
function essentials(report: InstanceReport): string {
  return JSON.stringify([
    report.role,
    report.ready,
    report.timeline,
    report.systemIdentifier,
    report.serverVersion ?? '',
    report.message ?? '',
    report.failover ?? '',
    report.switchover ?? '',
    report.switchoverServed ?? '',
    report.rejoin ?? '',
    report.synchronousStandbys ?? [],
    report.backups?.stanza ?? '',
    archiveFailing(report.backups?.archive),
    report.backups?.walDropped ?? null,
    report.restore ?? null,
    report.pendingRestart ?? [],
    report.controlLimits ?? null,
    report.restartServed ?? '',
    report.configHash ?? '',
    // A grown filesystem ends a resize step (operator/instances/volume-resize-plan.ts); free space
    // moves with every write and waits for the periodic refresh.
    report.dataVolume?.sizeBytes ?? 0,
    report.diskFull ?? '',
    report.users ?? null,
  ]);
}

/** Whether to write `next`, given what was last written (and when, on a monotonic clock). */
export function shouldWriteReport(
  last: { readonly report: InstanceReport; readonly atMs: number } | undefined,
  next: InstanceReport,
  nowMs: number,
  refreshMs = 10_000,
): boolean {
  if (!last) return true;
  if (essentials(last.report) !== essentials(next)) return true;
  return nowMs - last.atMs >= refreshMs;
}
