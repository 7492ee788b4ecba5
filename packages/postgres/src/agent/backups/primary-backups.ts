/**
 * The primary's backup work, for one leadership: keep `pgbackrest.conf` equal to the spec, create
 * the stanza whenever the repo options change (idempotent), and run the cluster's PostgresBackups
 * (backup-runner.ts) unless a repo host runs them (a volume repo is declared).
 *
 * Guarantees: at most one backup of the cluster runs: only the Lease holder runs any, in turn, and
 * with a volume repo only the repo host (one Pod) does.
 */
import { Backoff, Wakeup } from '@kanri/timing';
import {
  buildPgBackRestConf,
  CONFIG_KEY,
  decodeRestoreSource,
  type FullBackupReport,
  hasVolumeRepo,
  names,
  PGBACKREST_STANZA,
  type PgBackRestSpec,
  recordedRepoPaths,
  repoIndex,
  repoLocation,
  restoreStoredAt,
  unsupportedRepo,
} from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { markStanzaUpgraded } from '../postgres/upgrade-marker.js';
import { firstRecoverabilityPoint, latestFullBackups, parseBackups } from './backup-info.js';
import { BackupQueue } from './backup-runner.js';
import { failureReason } from './pgbackrest.js';
import { volumeAccess } from './volume-access.js';

const PERIOD_MS = 5_000;
const INFO_REFRESH_MS = 300_000;

/** The declared repos this agent can use, and why the others cannot be. */
export function usableSpec(spec: PgBackRestSpec | undefined): { usable?: PgBackRestSpec; unsupported: string[] } {
  if (!spec || spec.repos.length === 0) return { unsupported: [] };
  const unsupported = spec.repos.map(unsupportedRepo).filter((why): why is string => why !== undefined);
  const repos = spec.repos.filter((repo) => unsupportedRepo(repo) === undefined);
  return { ...(repos.length > 0 ? { usable: { ...spec, repos } } : {}), unsupported };
}

export async function runPrimaryBackups(ctx: AgentContext, leadership: AbortSignal): Promise<void> {
  const { config, log } = ctx;
  // Its own wake-up: a Wakeup has one waiter, and the primary's other loop waits on ctx.primaryWakeup.
  const wakeup = new Wakeup();
  const offCluster = ctx.view.onClusterChange(() => wakeup.wake());
  // The repo host's server coming up (its Pod's annotation) lets a volume repo be used.
  const offPods = ctx.view.onPodsChange(() => wakeup.wake());
  const queue = new BackupQueue({
    client: ctx.client,
    namespace: config.namespace,
    cluster: config.cluster,
    podName: config.podName,
    log,
    events: ctx.events,
    pgbackrest: ctx.pgbackrest,
    archiveStalled: (startedAt, ms) => ctx.backups.archiveStalled(startedAt, ms),
    onSucceeded: (type, startedAt) => ctx.backups.seeBackupSucceeded(type, startedAt),
    wakeup,
  });
  const stanzaBackoff = new Backoff({ initialMs: 5_000, maxMs: 120_000 });
  let stanzaRetryAt = 0;
  let infoAt = 0;
  let lastSucceeded = '';
  try {
    while (!leadership.aborted) {
      let busy = false;
      try {
        const declared = ctx.view.spec?.backups?.pgbackrest;
        const { usable, unsupported } = usableSpec(declared);
        const state = ctx.backups;
        const clash = usable ? sourceClash(ctx, usable) : undefined;
        if (!usable || clash) {
          state.archivingOff(
            clash ? `refused: ${clash}` : unsupported.length > 0 ? `unsupported: ${unsupported.join('; ')}` : undefined,
          );
        } else {
          const storedAt = recordedRepoPaths(ctx.view.cluster) ?? {};
          const written = await ctx.pgbackrest.write(usable, { storedAt, volume: volumeAccess(ctx) });
          const hash = written.hash;
          if (written.unreachable.length > 0) {
            // Archiving waits (postgres keeps the WAL) until the repo host serves, and until the
            // operator has recorded where each cloud repo keeps its stanza (or has refused it).
            const volume = usable.repos.filter((r) => r.volume !== undefined).map((r) => r.name);
            const [behindHost, unlocated] = [
              written.unreachable.filter((r) => volume.includes(r)),
              written.unreachable.filter((r) => !volume.includes(r)),
            ];
            state.archivingOff(
              `waiting: ${[
                ...(behindHost.length > 0
                  ? [
                      `${behindHost.join(', ')} ${behindHost.length > 1 ? 'are' : 'is'} reached through the repo host ${names.repoHost(config.cluster)}, whose pgBackRest TLS server (or this Pod's certificate) is not ready yet`,
                    ]
                  : []),
                ...(unlocated.length > 0
                  ? [`the operator has recorded no path for ${unlocated.join(', ')} (status.pgbackrest.repoPaths)`]
                  : []),
              ].join('; ')}`,
            );
            await wakeup.wait(PERIOD_MS, leadership);
            continue;
          }
          state.optionsWritten(hash, ctx.pgbackrest.archiveTarget());
          if (hash !== state.stanzaHash || (state.stanza !== 'created' && performance.now() >= stanzaRetryAt)) {
            const verb = state.stanzaUpgradeDue ? 'stanza-upgrade' : 'stanza-create';
            const result = await ctx.pgbackrest.run([verb], { signal: leadership });
            if (leadership.aborted) return;
            if (result.code === 0) {
              stanzaBackoff.reset();
              const upgraded = state.stanzaUpgradeDue;
              state.stanzaCreated(hash);
              if (upgraded) await markStanzaUpgraded(config.dataDir);
              log.info({ repos: usable.repos.map((r) => r.name), verb }, 'pgBackRest stanza created');
              infoAt = 0;
            } else {
              state.stanzaFailed(hash, failureReason(result, verb));
              stanzaRetryAt = performance.now() + stanzaBackoff.next();
              log.warn({ reason: state.stanza }, 'cannot create the pgBackRest stanza; retrying');
            }
          }
          if (state.stanzaReady) {
            // A backup another host ran (the repo host's) is read from pgBackRest as soon as it is recorded.
            const succeeded = queue.succeededKey();
            if (succeeded !== lastSucceeded) {
              lastSucceeded = succeeded;
              infoAt = 0;
            }
            if (performance.now() >= infoAt) {
              infoAt = performance.now() + INFO_REFRESH_MS;
              await refreshInfo(ctx, usable, leadership);
            }
            // With a volume repo, the repo host runs every backup (the only host that may).
            if (!hasVolumeRepo(usable) && (await queue.runNext(usable, leadership))) {
              infoAt = 0;
              busy = true;
            }
          }
        }
      } catch (error) {
        if (!leadership.aborted) log.warn({ err: error }, 'backup work failed; retrying');
      }
      if (!busy) await wakeup.wait(PERIOD_MS, leadership);
    }
  } finally {
    // Never awaited: the end of a leadership (fencing) must not wait for a request in flight to a
    // server that may be unreachable.
    offCluster();
    offPods();
    void queue.stop().catch(() => undefined);
  }
}

/**
 * Why this clone must not write into a repo it declares: the repo is where its data source's
 * backups live (so archiving would write a second history into the source's stanza).
 */
function sourceClash(ctx: AgentContext, own: PgBackRestSpec): string | undefined {
  const source = decodeRestoreSource(ctx.view.configData?.[CONFIG_KEY.restoreSource]);
  if (source?.id !== 'clone') return undefined;
  const paths = { pgPath: '', socketPath: '', port: 0, spoolPath: '', logPath: '', lockPath: '' };
  const recorded = recordedRepoPaths(ctx.view.cluster);
  const mine = buildPgBackRestConf({ spec: own, storedAt: recorded ?? {}, paths });
  const theirs = buildPgBackRestConf({
    spec: { repos: [source.repo], ...(source.global ? { global: source.global } : {}) },
    storedAt: restoreStoredAt(source, recorded),
    paths,
  });
  const sourceLocation = repoLocation(theirs.options, repoIndex(source.repo.name));
  const same = own.repos.find((r) => repoLocation(mine.options, repoIndex(r.name)) === sourceLocation);
  return same
    ? `${same.name} is the data source's repo (${sourceLocation.split('|').pop()}); a clone never archives into its source's repo path`
    : undefined;
}

/**
 * Reads `pgbackrest info` of every repo: the recovery window's start (the first repo's oldest
 * backup) and each repo's latest full backups, which the operator's major-upgrade gate holds a
 * PostgresBackup's word against. A repo that cannot answer keeps what it last listed.
 */
async function refreshInfo(ctx: AgentContext, spec: PgBackRestSpec, signal: AbortSignal): Promise<void> {
  const listed = new Map<string, FullBackupReport[]>();
  for (const [index, repo] of spec.repos.entries()) {
    const result = await ctx.pgbackrest.run([`--repo=${repoIndex(repo.name)}`, '--output=json', 'info'], { signal });
    if (signal.aborted) return;
    if (result.code !== 0) continue;
    const backups = parseBackups(result.stdout, PGBACKREST_STANZA);
    if (index === 0) ctx.backups.seeRecoveryWindow(firstRecoverabilityPoint(backups));
    listed.set(repo.name, latestFullBackups(repo.name, backups));
  }
  const kept = (ctx.backups.fullBackups ?? []).filter(
    (b) => !listed.has(b.repo) && spec.repos.some((r) => r.name === b.repo),
  );
  ctx.backups.seeFullBackups([...kept, ...[...listed.values()].flat()]);
}
