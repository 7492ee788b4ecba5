/** The agent's Prometheus metrics: postgres's state as the last report saw it, plus Node's process metrics. */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { archiveFailing, type InstanceReport } from '../../contract/index.js';
import { parseLsn } from '../plan/lsn.js';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly #up = new Gauge({
    name: 'kanri_postgres_up',
    help: '1 when postgres accepts connections',
    registers: [this.registry],
  });
  readonly #ready = new Gauge({
    name: 'kanri_postgres_ready',
    help: '1 when the instance reports ready',
    registers: [this.registry],
  });
  readonly #role = new Gauge({
    name: 'kanri_postgres_role',
    help: '1 for the role the instance has (label role: primary or replica)',
    labelNames: ['role'],
    registers: [this.registry],
  });
  readonly #timeline = new Gauge({
    name: 'kanri_postgres_timeline',
    help: 'Timeline of the instance',
    registers: [this.registry],
  });
  readonly #lag = new Gauge({
    name: 'kanri_postgres_replication_lag_bytes',
    help: 'Bytes of WAL the replica has yet to replay (0 on the primary)',
    registers: [this.registry],
  });
  readonly #replayed = new Gauge({
    name: 'kanri_postgres_replayed_lsn_bytes',
    help: 'Last replayed LSN (the current LSN on the primary) as a byte position',
    registers: [this.registry],
  });
  readonly #received = new Gauge({
    name: 'kanri_postgres_received_lsn_bytes',
    help: 'Last received LSN (the current LSN on the primary) as a byte position',
    registers: [this.registry],
  });
  readonly #leader = new Gauge({
    name: 'kanri_agent_leader',
    help: '1 while this instance holds the leader Lease',
    registers: [this.registry],
  });
  readonly #archiveFailing = new Gauge({
    name: 'kanri_wal_archive_failing',
    help: "1 while the primary's last attempt to archive a WAL segment failed",
    registers: [this.registry],
  });
  readonly #archivePending = new Gauge({
    name: 'kanri_wal_archive_pending_segments',
    help: 'WAL segments waiting to be archived (.ready files)',
    registers: [this.registry],
  });
  readonly #lastArchived = new Gauge({
    name: 'kanri_wal_last_archived_timestamp_seconds',
    help: 'When the last WAL segment was archived (Unix time)',
    registers: [this.registry],
  });
  readonly #stanza = new Gauge({
    name: 'kanri_pgbackrest_stanza_ready',
    help: "1 when the primary's pgBackRest stanza exists for the repo options in force",
    registers: [this.registry],
  });
  readonly crashes = new Counter({
    name: 'kanri_postgres_unexpected_exits_total',
    help: 'Times postgres exited without the agent asking',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  update(report: InstanceReport, up: boolean, leading: boolean): void {
    this.#up.set(up ? 1 : 0);
    this.#ready.set(report.ready ? 1 : 0);
    this.#role.set({ role: 'primary' }, report.role === 'primary' ? 1 : 0);
    this.#role.set({ role: 'replica' }, report.role === 'replica' ? 1 : 0);
    this.#timeline.set(report.timeline);
    this.#lag.set(report.lagBytes);
    this.#replayed.set(parseLsn(report.replayedLsn) ?? 0);
    this.#received.set(parseLsn(report.receivedLsn) ?? 0);
    this.#leader.set(leading ? 1 : 0);
    const backups = report.backups;
    this.#stanza.set(backups?.stanza === 'created' ? 1 : 0);
    this.#archiveFailing.set(archiveFailing(backups?.archive) ? 1 : 0);
    this.#archivePending.set(backups?.archive?.pendingSegments ?? 0);
    const last = Date.parse(backups?.archive?.lastArchivedTime ?? '');
    if (Number.isFinite(last)) this.#lastArchived.set(last / 1000);
  }
}
