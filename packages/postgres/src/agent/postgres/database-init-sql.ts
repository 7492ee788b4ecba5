/**
 * Runs `spec.databaseInitSQL` on the primary (plan/database-init-sql-plan.ts decides when): the
 * ConfigMap's key, through psql, so its meta-commands (`\c app`) work as they do in PGO. psql runs
 * as the superuser over the local socket, in database postgres, stops at the first error, and sends
 * query results nowhere: the SQL's output is the user's data, not the agent's log.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { NotFoundError } from '@kanri/client';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import {
  type DatabaseInitSqlRun,
  databaseInitSqlRunSchema,
  EVENT_REASON,
  laterInitSqlRun,
  PORT,
  SUPERUSER,
} from '../../contract/index.js';
import { runCommand } from '../commands.js';
import type { AgentContext } from '../context.js';
import { shouldReadInitSql, shouldRunSql } from '../plan/database-init-sql-plan.js';

/** Runs the SQL when it is due (call it after a pass over spec.users); resolves the run it made, if any (also reported on the Pod). */
export async function maybeRunDatabaseInitSql(
  ctx: AgentContext,
  signal: AbortSignal,
): Promise<DatabaseInitSqlRun | undefined> {
  const wanted = ctx.view.spec?.databaseInitSQL;
  const status = (ctx.view.cluster as { status?: { databaseInitSQL?: unknown; databaseInitSQLRun?: unknown } })?.status;
  const recorded = typeof status?.databaseInitSQL === 'string' ? status.databaseInitSQL : undefined;
  const fromStatus = databaseInitSqlRunSchema.safeParse(status?.databaseInitSQLRun);
  const lastRun = laterInitSqlRun(ctx.state.snapshot().decisions.databaseInitSQL, fromStatus.data);
  if (!wanted || !shouldReadInitSql({ wanted, recorded, lastRun })) return undefined;
  const finish = (sha256: string, message?: string): DatabaseInitSqlRun => {
    const run: DatabaseInitSqlRun = {
      configMap: wanted.name,
      key: wanted.key,
      sha256,
      result: message === undefined ? 'Succeeded' : 'Failed',
      ...(message === undefined ? {} : { message }),
      finishedAt: new Date().toISOString(),
    };
    ctx.state.reportDatabaseInitSql(run);
    ctx.events.record(
      message === undefined ? 'Normal' : 'Warning',
      EVENT_REASON.databaseInitSql,
      message ?? `spec.databaseInitSQL (ConfigMap ${wanted.name}, key ${wanted.key}) ran`,
    );
    return run;
  };
  const sql = await readSql(ctx, wanted);
  if (typeof sql !== 'string') {
    // Nothing ran: read again next pass, and say so once per change of reason.
    if (lastRun?.sha256 !== '' || lastRun.message !== sql.problem) {
      ctx.log.warn({ configMap: wanted.name, key: wanted.key }, sql.problem);
      return finish('', sql.problem);
    }
    return undefined;
  }
  const sha256 = createHash('sha256').update(sql).digest('hex');
  if (!shouldRunSql(wanted, sha256, lastRun)) return undefined;
  ctx.log.info({ configMap: wanted.name, key: wanted.key, sha256 }, 'running spec.databaseInitSQL');
  try {
    await runCommand(
      join(ctx.pgBin, 'psql'),
      [
        '-X',
        '-q',
        '-w',
        '-v',
        'ON_ERROR_STOP=1',
        '-v',
        'VERBOSITY=terse',
        '-o',
        '/dev/null',
        '-h',
        ctx.config.socketDir,
        '-p',
        String(PORT.postgres),
        '-U',
        SUPERUSER,
        '-d',
        'postgres',
        '-f',
        '-',
      ],
      { input: sql, log: ctx.log, redactor: ctx.redactor, signal },
    );
  } catch (error) {
    const message = `spec.databaseInitSQL (ConfigMap ${wanted.name}, key ${wanted.key}) failed; it runs again once its SQL changes: ${(error as Error).message}`;
    ctx.log.error({ configMap: wanted.name, key: wanted.key, sha256 }, message);
    return finish(sha256, message);
  }
  ctx.log.info({ configMap: wanted.name, key: wanted.key, sha256 }, 'spec.databaseInitSQL ran');
  return finish(sha256);
}

async function readSql(
  ctx: AgentContext,
  wanted: { readonly name: string; readonly key: string },
): Promise<string | { problem: string }> {
  try {
    const configMap = await ctx.client
      .resource<ConfigMap & { metadata: object }>('v1', 'ConfigMap')
      .get(wanted.name, { namespace: ctx.config.namespace });
    const sql = configMap.data?.[wanted.key];
    if (sql === undefined)
      return {
        problem: `spec.databaseInitSQL: ConfigMap ${wanted.name} has no key ${wanted.key} in its data; waiting for it`,
      };
    return sql;
  } catch (error) {
    if (error instanceof NotFoundError)
      return { problem: `spec.databaseInitSQL: ConfigMap ${wanted.name} does not exist; waiting for it` };
    throw error;
  }
}
