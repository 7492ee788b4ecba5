/**
 * The next step of a rolling update of the instances' Pods. Pure.
 *
 * A Pod is up to date when its template hash (pod-template-hash.ts) is the one the spec asks for
 * now. Replicas are replaced first, one at a time, each only once every updated instance is
 * ready, streaming and within `maximumLagOnFailover`. Then the primary: a switchover to the most
 * up-to-date updated replica (never one beyond the lag limit), after which the old primary is a
 * replica like the others; or, with `primaryUpdateMethod: restart` (or no updated replica to hand
 * over to), its Pod is replaced. `supervised` waits for the user's switchover annotation first.
 * An updated instance that cannot start (its image cannot be pulled, it crash-loops) or is not
 * ready within `readyTimeoutMs` halts the rollout: nothing else is touched until the spec
 * changes, and reverting it makes that instance outdated again, so it is replaced first.
 */

export interface RolloutMember {
  readonly name: string;
  readonly primary: boolean;
  readonly updated: boolean;
  /** The agent's report says ready (a replica: streaming from the primary). */
  readonly ready: boolean;
  readonly lagBytes?: number;
  /** Why its container cannot run (`ErrImagePull: …`, `CrashLoopBackOff: …`), if it cannot. */
  readonly failure?: string;
  /** Since when (ms) its Pod has existed without being ready; undefined while ready. */
  readonly notReadySinceMs?: number;
  readonly deleting: boolean;
}

export interface RolloutInput {
  readonly members: readonly RolloutMember[];
  readonly strategy: 'unsupervised' | 'supervised';
  readonly method: 'switchover' | 'restart';
  readonly maximumLagBytes: number;
  /** A switchover annotation is set (ours, or the user's), not yet served. */
  readonly switchoverPending: boolean;
  readonly nowMs: number;
  readonly readyTimeoutMs: number;
}

export type RolloutPhase =
  | 'Idle'
  | 'ReplacingReplica'
  | 'WaitingForInstance'
  | 'WaitingForUser'
  | 'SwitchingOver'
  | 'ReplacingPrimary'
  | 'Restarting'
  | 'Halted';

export type RolloutAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'replace'; readonly pod: string }
  | { readonly kind: 'switchover'; readonly to: string };

export interface RolloutStep {
  readonly phase: RolloutPhase;
  readonly action: RolloutAction;
  /** The instance the step is about. */
  readonly current?: string;
  readonly message: string;
  /** A halt's reason (the RolloutHalted condition's). */
  readonly reason?: string;
  readonly updated: number;
  readonly desired: number;
}

/** 10 minutes: a base backup of a large database can take a while before the replica is ready. */
export const ROLLOUT_READY_TIMEOUT_MS = 10 * 60_000;

export function planRollout(input: RolloutInput): RolloutStep {
  const members = [...input.members].sort((a, b) => a.name.localeCompare(b.name));
  const desired = members.length;
  const updated = members.filter((m) => m.updated && !m.deleting).length;
  const step = (phase: RolloutPhase, message: string, action: RolloutAction = { kind: 'none' }, current?: string) => ({
    phase,
    action,
    message,
    updated,
    desired,
    ...(current ? { current } : {}),
  });
  const outdated = members.filter((m) => !m.updated && !m.deleting);
  if (outdated.length === 0 && !members.some((m) => m.deleting)) return step('Idle', 'every instance is up to date');
  const deleting = members.find((m) => m.deleting);
  if (deleting)
    return step('ReplacingReplica', `waiting for ${deleting.name} to be replaced`, undefined, deleting.name);

  // Outdated instances that do not serve go first: replacing them costs nothing, and after a
  // revert the instance that halted the rollout is one of them.
  const broken = outdated.find((m) => !m.primary && !m.ready);
  if (broken) return step('ReplacingReplica', `replacing ${broken.name} (not ready)`, replace(broken), broken.name);

  for (const m of members.filter((x) => x.updated)) {
    if (m.failure)
      return {
        ...step('Halted', `${m.name} cannot run: ${m.failure}`, undefined, m.name),
        reason: 'InstanceCannotRun',
      };
    if (!m.ready) {
      const waited = input.nowMs - (m.notReadySinceMs ?? input.nowMs);
      if (waited > input.readyTimeoutMs)
        return {
          ...step(
            'Halted',
            `${m.name} has not been ready for ${Math.round(waited / 1000)} s after its update`,
            undefined,
            m.name,
          ),
          reason: 'InstanceNotReady',
        };
      return step('WaitingForInstance', `waiting for the updated ${m.name} to be ready`, undefined, m.name);
    }
    if (!m.primary && (m.lagBytes ?? 0) > input.maximumLagBytes)
      return step(
        'WaitingForInstance',
        `waiting for the updated ${m.name} to catch up (${m.lagBytes} bytes behind, limit ${input.maximumLagBytes})`,
        undefined,
        m.name,
      );
  }

  const replica = outdated.find((m) => !m.primary);
  if (replica) return step('ReplacingReplica', `replacing replica ${replica.name}`, replace(replica), replica.name);

  const primary = outdated.find((m) => m.primary);
  if (!primary) return step('WaitingForInstance', 'waiting for a primary', undefined);
  const candidates = members.filter((m) => m.updated && !m.primary && m.ready);
  if (input.method === 'restart' || candidates.length === 0) {
    const why = input.method === 'restart' ? 'primaryUpdateMethod is restart' : 'no updated replica to hand over to';
    return step('ReplacingPrimary', `replacing primary ${primary.name} (${why})`, replace(primary), primary.name);
  }
  if (input.switchoverPending)
    return step('SwitchingOver', `waiting for the switchover away from ${primary.name}`, undefined, primary.name);
  if (input.strategy === 'supervised')
    return step(
      'WaitingForUser',
      `replicas updated; primaryUpdateStrategy is supervised: switch over to an updated replica (annotation postgres.kanri.dev/switchover) to update ${primary.name}`,
      undefined,
      primary.name,
    );
  // Every updated replica is within maximumLagOnFailover here: one beyond it was waited for above.
  const [target] = [...candidates].sort((a, b) => (a.lagBytes ?? 0) - (b.lagBytes ?? 0)) as [RolloutMember];
  return step(
    'SwitchingOver',
    `switching over from ${primary.name} to ${target.name}`,
    { kind: 'switchover', to: target.name },
    primary.name,
  );
}

function replace(member: RolloutMember): RolloutAction {
  return { kind: 'replace', pod: member.name };
}
