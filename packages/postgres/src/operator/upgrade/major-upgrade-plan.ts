/**
 * A major-version upgrade, as the operator carries it out: `spec.postgresVersion` raised, with the
 * annotation `postgres.kanri.dev/allow-major-upgrade=<to>`. Pure: one step per reconcile, decided
 * from what the cache shows.
 *
 * 1. Checking: the primary runs `pg_upgrade --check` against the running server (no downtime).
 * 2. The backup gate: with backups configured, a full backup of the last 24 h must have succeeded,
 *    unless `postgres.kanri.dev/force-major-upgrade=true`.
 * 3. Stopping: every instance is stopped, the replicas first. Downtime starts.
 * 4. Upgrading: with every Pod gone, the Lease is removed (the new cluster starts a new history)
 *    and the last primary's Pod is created on the new image, which runs `pg_upgrade --link` and
 *    then serves as primary (agent/roles/major-upgrade.ts).
 * 5. Recloning: the replicas' old volumes are removed and they are re-created from the new primary.
 *
 * Guarantees: nothing is stopped before the check passed; the replicas' volumes, a second copy of
 * the old data, are removed only once the upgraded primary serves; a failure before the new server
 * started leaves the old data intact, and setting `spec.postgresVersion` back runs it again.
 */
import type { MajorUpgradePhase, MajorUpgradeStatus } from '../../api/major-upgrade-status.js';
import type { InstanceReport } from '../../contract/index.js';

export interface UpgradePod {
  readonly name: string;
  readonly deleting: boolean;
  /** ENV.majorUpgradeFrom: the Pod was created to upgrade. */
  readonly upgradeFrom: number | undefined;
  readonly report: InstanceReport | undefined;
  /** Why its container will not start (ErrImagePull, CrashLoopBackOff, …). */
  readonly failure?: string | undefined;
}

export interface UpgradeClaim {
  readonly instance: string;
  readonly createdAt: string | undefined;
  readonly deleting: boolean;
}

export interface MajorUpgradeInput {
  /** spec.postgresVersion. */
  readonly wanted: number;
  /** The allow-major-upgrade annotation's value. */
  readonly allowed: string | undefined;
  readonly force: boolean;
  /** The major the cluster runs (status.postgresVersion), if known. */
  readonly running: number | undefined;
  readonly previous: MajorUpgradeStatus | undefined;
  /** The primary now, or the last one seen. */
  readonly primary: string | undefined;
  /** The instances the cluster keeps. */
  readonly instances: readonly string[];
  readonly pods: readonly UpgradePod[];
  readonly claims: readonly UpgradeClaim[];
  /**
   * Backups are configured, and whether a full backup succeeded in the last 24 h (its
   * PostgresBackup and pgBackRest's info agree: backup-gate.ts); if not, why.
   */
  readonly backup: { readonly required: boolean; readonly recentFull: boolean; readonly why?: string };
  readonly now: Date;
}

export interface MajorUpgradePlan {
  /** The status to show; undefined leaves it as it was. */
  readonly status?: MajorUpgradeStatus;
  /** The upgrade owns the instances: the usual creation of Pods and the rollout wait. */
  readonly active: boolean;
  /** The major of the image instances' Pods get: the old one until the upgrade starts. */
  readonly imageMajor: number;
  readonly deletePods: readonly string[];
  readonly deleteLease: boolean;
  readonly createUpgradePod?: { readonly instance: string; readonly from: number };
  /** Instances whose volume (the old data) is removed, so that they clone the new primary. */
  readonly deleteClaims: readonly string[];
  /** The upgraded cluster's system identifier, to record in the status. */
  readonly systemIdentifier?: string;
  /** Take a full backup of the new cluster (PostgresBackup, trigger `upgrade`). */
  readonly requestBackup: boolean;
  readonly event?: { readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly note: string };
}

/** Phases in which the instances run as the upgrade has them, not as the spec alone would. */
export const UPGRADE_OWNS_INSTANCES: readonly MajorUpgradePhase[] = ['Stopping', 'Upgrading', 'Failed'];
/** Phases before the downtime, or instead of it: the cluster runs the old major, unchanged. */
const BEFORE: readonly MajorUpgradePhase[] = ['Checking', 'CheckFailed', 'WaitingForBackup'];

/** Whether the rollout waits: the upgrade runs, or is about to (the Pods keep the old major until then). */
export function upgradeHoldsRollout(phase: MajorUpgradePhase | undefined): boolean {
  return phase !== undefined && (UPGRADE_OWNS_INSTANCES.includes(phase) || BEFORE.includes(phase));
}

export const RECENT_BACKUP_MS = 24 * 3600_000;

const major = (version: string | undefined) => (version ? Number.parseInt(version, 10) : undefined);

/**
 * @example
 * ```ts
 * planMajorUpgrade({ wanted: 16, allowed: '16', force: false, running: 15, previous: undefined, primary: 'db-i-0',
 *   instances: ['db-i-0'], pods: [], claims: [], backup: { required: false, recentFull: false }, now: new Date() });
 * // { status: { phase: 'Checking', from: 15, to: 16, … }, active: false, imageMajor: 15, … }
 * ```
 */
export function planMajorUpgrade(input: MajorUpgradeInput): MajorUpgradePlan {
  const { previous: prev, wanted, now } = input;
  const idle = (imageMajor: number, status?: MajorUpgradeStatus): MajorUpgradePlan => ({
    active: false,
    imageMajor,
    deletePods: [],
    deleteLease: false,
    deleteClaims: [],
    requestBackup: false,
    ...(status ? { status } : {}),
  });
  const moved = (status: MajorUpgradeStatus, rest: Partial<MajorUpgradePlan>, event?: MajorUpgradePlan['event']) => ({
    ...idle(status.to),
    ...rest,
    status,
    ...(event && prev?.phase !== status.phase ? { event } : {}),
  });
  if (prev?.phase === 'Stopping') {
    if (wanted === prev.from) return rolledBack(prev, 'before any data changed', idle);
    if (input.pods.length > 0)
      return { ...idle(prev.from), active: true, status: prev, deletePods: stopOrder(input.pods, prev.instance) };
    return moved(
      { ...prev, phase: 'Upgrading', message: `${prev.instance} runs pg_upgrade --link ${prev.from} → ${prev.to}` },
      { active: true, deleteLease: true, createUpgradePod: { instance: prev.instance ?? '', from: prev.from } },
    );
  }
  if (prev?.phase === 'Upgrading' || prev?.phase === 'Failed') return upgrading(input, prev, idle, moved);
  if (prev?.phase === 'Recloning') return recloning(input, prev, idle, moved);

  const running = input.running;
  if (running === undefined || wanted <= running) {
    const back =
      prev && BEFORE.includes(prev.phase) && running === prev.from
        ? { ...prev, phase: 'RolledBack' as const, message: `spec.postgresVersion is ${running} again: no upgrade` }
        : undefined;
    return idle(running !== undefined && wanted < running ? running : wanted, back);
  }
  if (input.allowed !== String(wanted)) return idle(running);
  const base = { from: running, to: wanted };
  const primaryPod = input.pods.find((p) => p.name === input.primary);
  const check = primaryPod?.report?.upgradeCheck;
  const before = (phase: MajorUpgradePhase, message: string, event?: MajorUpgradePlan['event']) => ({
    ...moved({ ...base, phase, message }, {}, event),
    imageMajor: running,
  });
  if (!input.primary || !check || check.to !== wanted)
    return before(
      'Checking',
      `waiting for ${input.primary ?? 'a primary'} to run pg_upgrade --check against the running server`,
    );
  if (!check.ok)
    return before('CheckFailed', `pre-flight check on ${input.primary} failed; nothing was stopped: ${check.message}`, {
      type: 'Warning',
      reason: 'MajorUpgradeCheckFailed',
      note: `pg_upgrade --check ${running} → ${wanted} failed: ${check.message}`,
    });
  if (input.backup.required && !input.backup.recentFull && !input.force)
    return before(
      'WaitingForBackup',
      `backups are configured and ${input.backup.why ?? 'no full backup succeeded in the last 24 h'}: take one (a PostgresBackup of type full), or annotate postgres.kanri.dev/force-major-upgrade=true`,
    );
  return moved(
    {
      ...base,
      phase: 'Stopping',
      instance: input.primary,
      startedAt: now.toISOString(),
      message: `stopping every instance; ${input.primary}'s data will be upgraded`,
    },
    { active: true, imageMajor: running, deletePods: stopOrder(input.pods, input.primary) },
    {
      type: 'Normal',
      reason: 'MajorUpgradeStarted',
      note: `upgrading PostgreSQL ${running} → ${wanted}: the pre-flight check passed; stopping every instance`,
    },
  );
}

/**
 * The replicas first, the primary once they are gone: a replica stopping beside a primary already
 * stopped could take the free Lease and accept writes that the upgrade of the primary's data
 * would then drop. With the replicas gone, the primary takes writes until it stops (in
 * synchronous mode they wait, unacknowledged), and all of them are in the data upgraded.
 */
function stopOrder(pods: readonly UpgradePod[], primary: string | undefined): string[] {
  const replicas = pods.filter((p) => p.name !== primary);
  const first = replicas.length > 0 ? replicas : pods;
  return first.filter((p) => !p.deleting).map((p) => p.name);
}

type Idle = (imageMajor: number, status?: MajorUpgradeStatus) => MajorUpgradePlan;
type Moved = (
  status: MajorUpgradeStatus,
  rest: Partial<MajorUpgradePlan>,
  event?: MajorUpgradePlan['event'],
) => MajorUpgradePlan;

function rolledBack(prev: MajorUpgradeStatus, when: string, idle: Idle): MajorUpgradePlan {
  return {
    ...idle(prev.from, {
      ...prev,
      phase: 'RolledBack',
      message: `spec.postgresVersion is ${prev.from} again: the upgrade stopped ${when}; PostgreSQL ${prev.from} runs on the old data`,
    }),
    event: {
      type: 'Normal',
      reason: 'MajorUpgradeRolledBack',
      note: `major upgrade ${prev.from} → ${prev.to} rolled back ${when}`,
    },
  };
}

function upgrading(input: MajorUpgradeInput, prev: MajorUpgradeStatus, idle: Idle, moved: Moved): MajorUpgradePlan {
  const pod = input.pods.find((p) => p.name === prev.instance);
  // Only this upgrade's report: the volume remembers an earlier upgrade's too.
  const reported = pod?.report?.upgrade;
  const report = reported?.from === prev.from && reported.to === prev.to ? reported : undefined;
  const succeeded = report?.result === 'succeeded';
  // Until the agent says it is past the point of no return, stopping it puts the old data back.
  if (input.wanted === prev.from && !succeeded) {
    const upgradePods = input.pods.filter((p) => p.upgradeFrom !== undefined && !p.deleting).map((p) => p.name);
    return { ...rolledBack(prev, 'before the new server started', idle), deletePods: upgradePods };
  }
  const owning = { active: true, imageMajor: prev.to };
  if (!pod)
    return {
      ...idle(prev.to),
      ...owning,
      status: prev,
      createUpgradePod: { instance: prev.instance ?? '', from: prev.from },
    };
  if (report?.result === 'failed')
    return moved(
      {
        ...prev,
        phase: 'Failed',
        message: `${report.message}. The old data is intact: set spec.postgresVersion back to ${prev.from} to run it again`,
      },
      owning,
      {
        type: 'Warning',
        reason: 'MajorUpgradeFailed',
        note: `upgrade ${prev.from} → ${prev.to} failed: ${report.message}`,
      },
    );
  const serving = succeeded && pod.report?.ready && major(pod.report.serverVersion) === prev.to;
  if (!serving) {
    // An image that cannot start never reaches pg_upgrade: the old data is untouched.
    const message =
      report?.message ??
      (pod.failure ? `${prev.instance} cannot start on the new image: ${pod.failure}` : `starting ${prev.instance}`);
    return { ...idle(prev.to), ...owning, status: { ...prev, phase: 'Upgrading', message } };
  }
  const downtime = prev.startedAt ? (input.now.getTime() - Date.parse(prev.startedAt)) / 1000 : undefined;
  return moved(
    {
      ...prev,
      phase: 'Recloning',
      message: `${prev.instance} serves PostgreSQL ${pod.report?.serverVersion}; re-creating the replicas from it`,
      ...(downtime !== undefined ? { downtimeSeconds: Math.round(downtime * 10) / 10 } : {}),
      ...(report?.pgUpgradeMs !== undefined ? { pgUpgradeSeconds: Math.round(report.pgUpgradeMs / 100) / 10 } : {}),
    },
    { active: true, ...(pod.report?.systemIdentifier ? { systemIdentifier: pod.report.systemIdentifier } : {}) },
    {
      type: 'Normal',
      reason: 'MajorUpgradeServing',
      note: `${prev.instance} serves PostgreSQL ${pod.report?.serverVersion} after ${downtime?.toFixed(1) ?? '?'} s of downtime; re-cloning the replicas`,
    },
  );
}

function recloning(input: MajorUpgradeInput, prev: MajorUpgradeStatus, idle: Idle, moved: Moved): MajorUpgradePlan {
  const startedMs = Date.parse(prev.startedAt ?? '');
  const stale = input.claims.filter(
    (c) => c.instance !== prev.instance && !c.deleting && Date.parse(c.createdAt ?? '') < startedMs,
  );
  if (stale.length > 0 || input.claims.some((c) => c.deleting))
    return {
      ...idle(prev.to),
      active: true,
      status: prev,
      deleteClaims: stale.map((c) => c.instance),
      deletePods: input.pods.filter((p) => stale.some((c) => c.instance === p.name) && !p.deleting).map((p) => p.name),
    };
  const done = input.instances.filter((name) => {
    const report = input.pods.find((p) => p.name === name)?.report;
    return report?.ready && major(report.serverVersion) === prev.to;
  });
  if (done.length < input.instances.length)
    return idle(prev.to, {
      ...prev,
      message: `re-creating the replicas from ${prev.instance}: ${done.length}/${input.instances.length} ready on PostgreSQL ${prev.to}`,
    });
  return moved(
    {
      ...prev,
      phase: 'Succeeded',
      completedAt: input.now.toISOString(),
      message: `every instance runs PostgreSQL ${prev.to}; the write downtime was ${prev.downtimeSeconds ?? '?'} s`,
    },
    { active: false, requestBackup: input.backup.required },
    {
      type: 'Normal',
      reason: 'MajorUpgradeSucceeded',
      note: `upgraded ${prev.from} → ${prev.to}: ${done.length} instances ready`,
    },
  );
}
