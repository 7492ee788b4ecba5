/**
 * What every role of the agent acts through: its configuration, the I/O executors (postgres, the
 * local database, the instance's files, Events, the Lease writes), the cached view of the cluster
 * and the one state owner. Built once by the agent; roles receive it and keep nothing of their own
 * beyond one leadership or one lap.
 */
import type { KubeClient } from '@kanri/client';
import type { Lease, LeaseRef } from '@kanri/runtime';
import type { Wakeup } from '@kanri/timing';
import type { LiveStatus } from '../contract/index.js';
import type { BackupsState } from './backups/backups-state.js';
import type { PgBackRest } from './backups/pgbackrest.js';
import type { ClusterView } from './cluster-view.js';
import type { AgentConfig } from './config.js';
import type { Logger } from './log/logger.js';
import type { Redactor } from './log/redactor.js';
import type { PeerClient } from './peers/peer-client.js';
import type { WalRemovedWatch } from './plan/wal-removed-watch.js';
import type { InstanceFiles } from './postgres/instance-files.js';
import type { LocalDb } from './postgres/local-db.js';
import type { PostgresProcess } from './postgres/postgres-process.js';
import type { AgentEvents } from './reporting/agent-events.js';
import type { PostgresRequests } from './requests/postgres-requests.js';
import type { AgentStateStore } from './state.js';

export interface AgentContext {
  readonly config: AgentConfig;
  /** Resolved directory of postgres's programs. */
  readonly pgBin: string;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly redactor: Redactor;
  readonly postgres: PostgresProcess;
  readonly db: LocalDb;
  readonly files: InstanceFiles;
  readonly view: ClusterView;
  readonly state: AgentStateStore;
  readonly events: AgentEvents;
  /** The cluster's leader Lease, for the runtime's Lease writes. */
  readonly leaseRef: LeaseRef;
  /** Reloads and restarts asked of postgres by the agent's activities: only the role cycle serves them (requests/serve-requests.ts). */
  readonly requests: PostgresRequests;
  /** Cuts the primary's periodic tasks short (a spec change, a new leadership). */
  readonly primaryWakeup: Wakeup;
  /** The first postgres log line saying this replica's WAL is not part of its primary's history. */
  readonly divergence: { line: string | undefined };
  /** Whether the primary no longer has WAL this replica needs, from postgres's log (see roles/reclone.ts). */
  readonly walRemoved: WalRemovedWatch;
  /** The last FATAL or PANIC line of postgres (connection refusals while starting excluded). */
  readonly lastFatal: { line: string | undefined };
  /** pgBackRest on this instance: its configuration file and commands. */
  readonly pgbackrest: PgBackRest;
  /** The repos and archive as this agent knows them. */
  readonly backups: BackupsState;
  /** Calls to peers' API: mutual TLS once the agent has the cluster's peer certificate. */
  readonly peers: PeerClient;
  /** This instance's live status, as served to peers. */
  liveStatus(): Promise<LiveStatus>;
  /** Why the data volume counts as full now, or undefined (postgres/disk-watch.ts). */
  diskFull(): Promise<string | undefined>;
}

/**
 * How one role's run ends: the mode to run next (with what it needs), or undefined when the agent
 * is stopping.
 */
/** A failover's take-over of the Lease: leading starts from this write instead of another round trip. */
export interface Takeover {
  readonly lease: Lease;
  /** `performance.now()` when the write was sent: the renew deadline counts from there. */
  readonly sentAtMs: number;
  /** What to report once promoted (an Event, moving the role label off the old primary). */
  readonly afterPromotion: () => void;
}

export type Transition =
  | {
      readonly mode: 'lead';
      /** The Lease as a failover just took it, and when that write was sent: leading starts from it. */
      readonly takeover?: Takeover;
      /** This primary came from initdb just now: it runs without synchronous standbys until N stream. */
      readonly fresh?: boolean;
    }
  | { readonly mode: 'follow' }
  | { readonly mode: 'rejoin'; readonly holder: string | undefined; readonly why: string };

/** The names of the cluster's Pods, as the cache has them. */
export function podNames(ctx: AgentContext): string[] {
  return ctx.view
    .pods()
    .map((pod) => pod.metadata?.name ?? '')
    .filter(Boolean);
}
