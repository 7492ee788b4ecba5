/**
 * The next in-place restart for parameters that take effect only after one. Pure.
 *
 * Replicas restart first, one at a time, then the primary: a standby may run with higher
 * hot-standby limits than its primary, never lower. When one of those limits *decreases*, the
 * order turns: the primary restarts first, and each replica only once its control data shows the
 * primary's new value (it replays the change from the WAL), or it would refuse to start
 * ("insufficient parameter settings"). Instances that are not ready are left alone.
 */
import type { PendingRestart } from '../../contract/index.js';

/** The settings a standby must have at least as high as its primary. */
export const HOT_STANDBY_LIMITS: readonly string[] = [
  'max_connections',
  'max_worker_processes',
  'max_wal_senders',
  'max_prepared_transactions',
  'max_locks_per_transaction',
];

export interface RestartMember {
  readonly name: string;
  readonly primary: boolean;
  readonly ready: boolean;
  readonly pendingRestart?: readonly PendingRestart[];
  readonly controlLimits?: Readonly<Record<string, number>>;
  /** The token on its Pod (ANNOTATION.restartPostgres) and the one it last served. */
  readonly requested?: string;
  readonly served?: string;
  /** The configuration postgres has loaded (CONFIG_HASH_SETTING), as reported. */
  readonly configHash?: string;
}

export type RestartStep =
  | { readonly kind: 'idle' }
  | { readonly kind: 'wait'; readonly current: string; readonly message: string }
  | { readonly kind: 'restart'; readonly pod: string; readonly message: string };

function decreases(member: RestartMember): PendingRestart[] {
  return (member.pendingRestart ?? []).filter(
    (p) => HOT_STANDBY_LIMITS.includes(p.name) && Number(p.wanted) < Number(p.running),
  );
}

function names(pending: readonly PendingRestart[]): string {
  return pending.map((p) => `${p.name} ${p.running} → ${p.wanted}`).join(', ');
}

/**
 * @param configHash the configuration's hash now: no restart is ordered while a ready instance
 *   has loaded another one, since until each has, the pending lists do not show the whole change
 *   (a primary alone pending would be restarted before replicas that have not seen it yet).
 */
export function planRestart(members: readonly RestartMember[], configHash?: string): RestartStep {
  const sorted = [...members].sort((a, b) => a.name.localeCompare(b.name));
  const behindConfig = sorted.find(
    (m) => m.ready && m.configHash !== undefined && configHash !== undefined && m.configHash !== configHash,
  );
  if (behindConfig)
    return {
      kind: 'wait',
      current: behindConfig.name,
      message: `waiting for ${behindConfig.name} to load the new configuration`,
    };
  const inFlight = sorted.find((m) => m.requested !== undefined && m.requested !== m.served);
  if (inFlight) return { kind: 'wait', current: inFlight.name, message: `waiting for ${inFlight.name} to restart` };
  const pending = sorted.filter((m) => m.ready && (m.pendingRestart?.length ?? 0) > 0);
  if (pending.length === 0) return { kind: 'idle' };
  const restart = (m: RestartMember, why: string): RestartStep => ({
    kind: 'restart',
    pod: m.name,
    message: `restarting ${m.name} in place (${why}) for ${names(m.pendingRestart ?? [])}`,
  });
  const primary = pending.find((m) => m.primary);
  if (primary && decreases(primary).length > 0) return restart(primary, 'primary first: a hot-standby limit decreases');
  for (const replica of pending.filter((m) => !m.primary)) {
    const behind = decreases(replica).filter(
      (p) => (replica.controlLimits?.[p.name] ?? Number.POSITIVE_INFINITY) > Number(p.wanted),
    );
    if (behind.length > 0)
      return {
        kind: 'wait',
        current: replica.name,
        message: `waiting for ${replica.name} to replay the primary's new ${behind.map((p) => p.name).join(', ')} before restarting it`,
      };
    return restart(replica, 'replicas first');
  }
  return primary ? restart(primary, 'after the replicas') : { kind: 'idle' };
}
