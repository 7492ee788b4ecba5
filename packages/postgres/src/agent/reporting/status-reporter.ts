/**
 * The agent's status loop: every 2 s (or at once when woken) it observes postgres, updates the
 * metrics and the readiness the probes answer from, and patches its own Pod (role label and
 * InstanceReport annotation) when the report calls for a write.
 */
import type { KubeClient } from '@kanri/client';
import { Wakeup } from '@kanri/timing';
import { ANNOTATION, type DataVolumeReport, encodeReport, type InstanceReport, LABEL } from '../../contract/index.js';
import type { BackupsState } from '../backups/backups-state.js';
import type { AgentConfig } from '../config.js';
import type { Logger } from '../log/logger.js';
import type { HealthSource } from '../peers/http-server.js';
import { buildReport, servingProblem, shouldWriteReport } from '../plan/report.js';
import type { LocalDb } from '../postgres/local-db.js';
import type { PostgresProcess } from '../postgres/postgres-process.js';
import type { AgentState } from '../state.js';
import type { AgentMetrics } from './metrics.js';

export interface StatusReporterOptions {
  readonly config: AgentConfig;
  readonly client: KubeClient;
  readonly db: LocalDb;
  readonly postgres: PostgresProcess;
  readonly metrics: AgentMetrics;
  readonly log: Logger;
  /** A snapshot of the agent's state: the reporter reads it, never writes it. */
  readonly state: () => AgentState;
  /** The repos and archive as the agent knows them (the primary reports them). */
  readonly backups?: () => BackupsState;
  /** The hot-standby limits in the control file (pg_controldata), asked only while a restart is pending. */
  readonly controlLimits?: () => Promise<Readonly<Record<string, number>>>;
  /** Why the data volume is full now, or undefined (see postgres/disk-watch.ts). */
  readonly diskFull?: () => Promise<string | undefined>;
  /** The data volume's size and free space as `diskFull` last read them. */
  readonly dataVolume?: () => DataVolumeReport | undefined;
  /** The public half of the agent's peer key (agent/peers/peer-identity.ts), for the operator to certify. */
  readonly peerKey?: string;
}

const PERIOD_MS = 2_000;
/**
 * The primary's LSN is written at least this often: replicas judge their lag on failover from it
 * (besides their WAL receivers' view), so it must not be older than a few seconds.
 */
const PRIMARY_REFRESH_MS = 3_000;
/** The loop not ticking for this long makes /healthz fail. */
const STALL_MS = 30_000;

export class StatusReporter implements HealthSource {
  readonly #options: StatusReporterOptions;
  readonly #wakeup = new Wakeup();
  #lastTickMs = performance.now();
  /** What /readyz answers (see servingProblem); null before the first observation. */
  #serving: string | undefined | null = null;
  #written: { report: InstanceReport; atMs: number } | undefined;

  constructor(options: StatusReporterOptions) {
    this.#options = options;
  }

  health(): string | null {
    if (performance.now() - this.#lastTickMs > STALL_MS) return 'the agent loop has stalled';
    const { postgres } = this.#options;
    if (postgres.wanted && !postgres.running) return 'postgres is not running (restarting)';
    return null;
  }

  readiness(): string | null {
    if (this.#options.state().stopping) return 'shutting down';
    if (this.#serving === null) return 'no status yet';
    return this.#serving ?? null;
  }

  /** Look again now (the role, phase or postgres changed). */
  wake(): void {
    this.#wakeup.wake();
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      this.#lastTickMs = performance.now();
      try {
        await this.report(false);
      } catch (error) {
        this.#options.log.warn({ err: error }, 'cannot report on the Pod; retrying');
      }
      await this.#wakeup.wait(PERIOD_MS, signal);
    }
  }

  /** Observes postgres and patches the Pod if the report calls for it (always, with `force`). */
  async report(force: boolean): Promise<void> {
    const { config, client, db, postgres, metrics, log } = this.#options;
    const state = this.#options.state();
    if (state.role === undefined) return;
    const patchPod = (metadata: { labels: Record<string, string>; annotations?: Record<string, string> }) =>
      client
        .resource('v1', 'Pod')
        .patch(
          config.podName,
          { metadata },
          { namespace: config.namespace, type: 'merge', signal: AbortSignal.timeout(10_000) },
        );
    // A new role goes out first, on its own: clients find the primary by this label, and observing
    // postgres in the middle of a promotion takes tens of ms.
    if (this.#written && this.#written.report.role !== state.role) {
      await patchPod({ labels: { [LABEL.role]: state.role } });
    }
    const observation = postgres.running ? await db.observe() : { connected: false };
    const report = buildReport({
      role: state.role,
      leading: state.leading,
      observation,
      primaryLsn: state.primaryLsn,
      phaseMessage: state.stopping ? 'shutting down' : state.phase,
      now: new Date(),
      decisions: state.decisions,
    });
    const backups = this.#options.backups?.();
    if (backups?.restore) report.restore = backups.restore;
    const backupsReport = state.leading ? backups?.report() : undefined;
    if (backupsReport && observation.connected) {
      const archive = await db.observeArchive().catch(() => undefined);
      const failure = backups?.lastFailure;
      backupsReport.archive = {
        ...archive,
        ...(failure && failure.wal === archive?.lastFailedWal ? { lastFailureReason: failure.reason } : {}),
      };
      if (archive?.lastArchivedTime)
        backupsReport.recoveryWindow = { ...backupsReport.recoveryWindow, last: archive.lastArchivedTime };
    }
    if (backupsReport) report.backups = backupsReport;
    if (this.#options.peerKey) report.peerKey = this.#options.peerKey;
    // What the operator orders restarts by (operator/rollout/restart-plan.ts).
    if (observation.configHash) report.configHash = observation.configHash;
    const pending = observation.restartPending ? await db.pendingRestart().catch(() => []) : [];
    if (pending.length > 0) {
      report.pendingRestart = pending;
      // A standby's copy of its primary's limits exists only in the control file.
      const limits = observation.inRecovery ? await this.#options.controlLimits?.().catch(() => undefined) : undefined;
      if (limits) report.controlLimits = { ...limits };
    }
    const diskFull = await this.#options.diskFull?.().catch(() => undefined);
    if (diskFull) report.diskFull = diskFull;
    const dataVolume = this.#options.dataVolume?.();
    if (dataVolume) report.dataVolume = dataVolume;
    metrics.update(report, observation.connected, state.leading);
    this.#serving = servingProblem({ role: state.role, leading: state.leading, observation });
    const now = performance.now();
    const refreshMs = report.role === 'primary' && state.leading ? PRIMARY_REFRESH_MS : undefined;
    if (!force && !shouldWriteReport(this.#written, report, now, refreshMs)) return;
    await patchPod({
      labels: { [LABEL.role]: report.role },
      annotations: { [ANNOTATION.status]: encodeReport(report) },
    });
    const last = this.#written?.report;
    if (last?.ready !== report.ready || last?.role !== report.role)
      log.info({ role: report.role, ready: report.ready, message: report.message }, 'instance status');
    this.#written = { report, atMs: now };
  }
}
