/**
 * The agent's own state (what postgres cannot tell): role, mode, phase, leadership and the
 * decisions it reports. `AgentStateStore` is its only owner; every change goes through one of its
 * named transitions, and everyone else (the status reporter, the peer API) reads snapshots.
 */
import type { InstanceReport, Role, UsersReport } from '../contract/index.js';
import type { Vouch } from './plan/leadership/failsafe-plan.js';
import { maxLsn } from './plan/lsn.js';
import type { ReportDecisions } from './plan/report.js';

/** What the agent runs as: primary, streaming replica, or a former primary rejoining. */
export type Mode = 'lead' | 'follow' | 'rejoin';

export interface AgentState {
  /** Undefined until the boot plan is known: nothing is reported before that. */
  readonly role: Role | undefined;
  readonly mode: Mode | undefined;
  readonly leading: boolean;
  /** Why the instance cannot serve at this stage (bootstrapping, fenced, …); undefined once it runs. */
  readonly phase: string | undefined;
  readonly stopping: boolean;
  /** Replicas: the primary's last reported LSN. */
  readonly primaryLsn: string | undefined;
  /** The highest LSN the current primary is known to have reached; reset when the holder changes. */
  readonly primaryLsnSeen: string | undefined;
  readonly decisions: ReportDecisions;
  /** Replicas: the last time this one vouched for a primary in failsafe mode (plan/leadership/failsafe-plan.ts). */
  readonly vouch: Vouch | undefined;
}

type Decision = keyof Pick<InstanceReport, 'failover' | 'switchover' | 'switchoverServed' | 'rejoin' | 'restartServed'>;

/** The operator's orders this instance served (their tokens), as its report says. */
export type ServedOrders = Pick<InstanceReport, 'switchoverServed' | 'restartServed'>;

/**
 * @example
 * ```ts
 * const state = new AgentStateStore(() => reporter.wake());
 * state.enter('follow', 'replica', 'looking for the primary');
 * reporter = new StatusReporter({ ..., state: () => state.snapshot() });
 * ```
 */
export class AgentStateStore {
  #state: AgentState = {
    role: undefined,
    mode: undefined,
    leading: false,
    phase: 'starting',
    stopping: false,
    primaryLsn: undefined,
    primaryLsnSeen: undefined,
    decisions: {},
    vouch: undefined,
  };
  readonly #onVisibleChange: () => void;

  /** `onVisibleChange` runs when the role, the leadership or stopping changed (what Services route by). */
  constructor(onVisibleChange: () => void = () => undefined) {
    this.#onVisibleChange = onVisibleChange;
  }

  snapshot(): AgentState {
    return this.#state;
  }

  #set(patch: Partial<AgentState>): void {
    const before = this.#state;
    this.#state = { ...before, ...patch };
    const after = this.#state;
    // Role and leadership change what Services route to (the role label, readiness): report at
    // once. A phase alone waits for the reporter's next tick, so a promotion is not slowed by
    // report writes for each of its steps.
    if (before.role !== after.role || before.leading !== after.leading || before.stopping !== after.stopping)
      this.#onVisibleChange();
  }

  /** The boot plan is known: from now on the instance reports as `role`. */
  boot(role: Role): void {
    this.#set({ role });
  }

  /** Starts running as `mode`; not leading until {@link startedLeading}. */
  enter(mode: Mode, role: Role, phase: string | undefined): void {
    this.#set({ mode, role, phase, leading: mode === 'lead' ? this.#state.leading : false });
  }

  /**
   * Why the instance cannot serve now; undefined once it serves. `report` makes the reporter look
   * at once, for a phase that changes what the instance can serve (a switchover stopping writes).
   */
  setPhase(phase: string | undefined, options: { readonly report?: boolean } = {}): void {
    const before = this.#state.phase;
    this.#set({ phase });
    if (options.report && before !== phase) this.#onVisibleChange();
  }

  /** postgres runs as a writable primary inside a leadership of the Lease. */
  startedLeading(): void {
    this.#set({ leading: true, phase: undefined });
  }

  /** The leadership ended; `phase` says why the instance does not serve now. */
  stoppedLeading(phase: string | undefined): void {
    this.#set({ leading: false, ...(phase !== undefined ? { phase } : {}) });
  }

  beginStopping(): void {
    this.#set({ stopping: true });
  }

  stopped(): void {
    this.#set({ stopping: true, phase: 'stopped', leading: false });
  }

  decide(kind: Decision, message: string | undefined): void {
    this.#set({ decisions: { ...this.#state.decisions, [kind]: message } });
  }

  /**
   * Takes over the served tokens of the report this instance's last agent wrote (it restarted,
   * postgres ran on), before this agent reports: an order it served is not served again.
   */
  recallServed(previous: ServedOrders | undefined): void {
    const served = Object.fromEntries(
      (['switchoverServed', 'restartServed'] as const).flatMap((kind) =>
        previous?.[kind] !== undefined && this.#state.decisions[kind] === undefined ? [[kind, previous[kind]]] : [],
      ),
    );
    this.#set({ decisions: { ...this.#state.decisions, ...served } });
  }

  reportSynchronousStandbys(members: readonly string[] | undefined): void {
    this.#set({ decisions: { ...this.#state.decisions, synchronousStandbys: members ? [...members] : undefined } });
  }

  /** The primary finished a pass over spec.users (primary-tasks.ts). */
  reportUsers(users: UsersReport): void {
    this.#set({ decisions: { ...this.#state.decisions, users } });
  }

  /** The primary ran spec.databaseInitSQL, or could not read it. */
  reportDatabaseInitSql(databaseInitSQL: NonNullable<ReportDecisions['databaseInitSQL']>): void {
    this.#set({ decisions: { ...this.#state.decisions, databaseInitSQL } });
  }

  /** A major upgrade's pre-flight check ended (the primary), or the upgrade on this instance moved on. */
  reportUpgrade(report: Pick<ReportDecisions, 'upgradeCheck'> | Pick<ReportDecisions, 'upgrade'>): void {
    this.#set({ decisions: { ...this.#state.decisions, ...report } });
  }

  /** This replica vouched for `holder` (failsafe mode): it must not take over from it for a lease duration. */
  vouchFor(holder: string, atMs: number): void {
    this.#set({ vouch: { holder, atMs } });
  }

  /** The primary's LSN as its report says (replicas). */
  seePrimaryReport(lsn: string | undefined): void {
    this.#set({ primaryLsn: lsn, primaryLsnSeen: maxLsn(this.#state.primaryLsnSeen, lsn) });
  }

  /** A higher position of the current primary, from any source (WAL receiver, peers, reports). */
  seePrimaryLsn(lsn: string | null | undefined): void {
    const seen = maxLsn(this.#state.primaryLsnSeen, lsn ?? undefined);
    if (seen !== this.#state.primaryLsnSeen) this.#set({ primaryLsnSeen: seen });
  }

  /** A new primary: what the last one reached says nothing about this one. */
  forgetPrimaryLsn(): void {
    this.#set({ primaryLsnSeen: undefined });
  }
}
