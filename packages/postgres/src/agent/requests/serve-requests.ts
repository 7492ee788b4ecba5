/**
 * The role cycle serves what the agent's activities asked of postgres (agent/requests/postgres-requests.ts):
 * the roles that run postgres call this from their loops (the primary's periodic tasks, the
 * replica's laps), and nothing else reloads or restarts postgres on an activity's behalf.
 */
import type { AgentContext } from '../context.js';
import type { Logger } from '../log/logger.js';
import type { LocalDb } from '../postgres/local-db.js';
import { restartInPlace } from './restart-in-place.js';

/** How long after a reload postgres is asked which parameters wait for a restart (it applies a reload asynchronously). */
const PENDING_RESTART_CHECK_MS = 1_000;

/**
 * Serves the request pending, if any: writes the configuration files (the activities changed only
 * what they should say), then reloads or restarts postgres. `role` is the serving role's signal.
 * Rejects when the files cannot be written or postgres not restarted (the request is served at the
 * next call).
 *
 * @example
 * ```ts
 * await servePostgresRequests(ctx, leadership);
 * ```
 */
export async function servePostgresRequests(ctx: AgentContext, role: AbortSignal): Promise<void> {
  const { files, postgres, requests, log } = ctx;
  if (role.aborted || !requests.pending) return;
  // Kept while postgres does not run: no reload would reach it, and a restart token must still be
  // answered once it runs. The files are written all the same.
  if (!postgres.running) return writeAskedFiles(ctx);
  const request = requests.take();
  if (!request) return;
  try {
    await files.write();
    if (request.kind === 'restart') {
      if (!(await restartInPlace(ctx, role, request.token))) requests.retryLater(request);
      return;
    }
    // Through SQL, not a SIGHUP to the postmaster: one that has only just started may not have its
    // handler yet, and the signal's default action ends it (an agent test's replica exited so on
    // the reload its first lap served). A postmaster that accepts a connection has the handler; one
    // that does not yet is still starting, reads the files written above, and is asked again at the
    // next lap.
    if (!(await reloadThroughSql(ctx.db))) {
      requests.retryLater(request);
      return;
    }
  } catch (error) {
    requests.retryLater(request);
    throw error;
  }
  log.info({ reasons: request.reasons }, 'postgres reloaded');
  setTimeout(() => void warnPendingRestart(ctx.db, log), PENDING_RESTART_CHECK_MS).unref();
}

/**
 * While postgres does not run, writes the files as the requests pending want them: postgres that
 * exited (a parameter it refuses at start, say) is started again by its supervisor and reads them
 * then, so a corrected configuration ends the crash loop before any role lap serves the request.
 * The requests stay pending for when it runs.
 */
export async function writeAskedFiles(ctx: AgentContext): Promise<void> {
  if (ctx.requests.pending && !ctx.postgres.running) await ctx.files.write();
}

async function reloadThroughSql(db: LocalDb): Promise<boolean> {
  return db.query('SELECT pg_reload_conf()').then(
    () => true,
    () => false,
  );
}

async function warnPendingRestart(db: LocalDb, log: Logger): Promise<void> {
  try {
    const rows = await db.query<{ name: string }>('SELECT name FROM pg_settings WHERE pending_restart');
    if (rows.length > 0)
      log.warn({ parameters: rows.map((row) => row.name) }, 'some parameters take effect only after a restart');
  } catch {
    // postgres is restarting or stopping; the next reload checks again.
  }
}
