/**
 * Whether the primary runs `spec.databaseInitSQL` now. The SQL runs once per cluster: the
 * operator's `status.databaseInitSQL` records a run that succeeded, and a failed run is not repeated
 * for the same text, since psql stops at the first error with the statements before it committed,
 * and running them again could apply them twice. A ConfigMap that cannot be read is read again on
 * every pass: nothing ran. Pure.
 */
import type { DatabaseInitSqlRun } from '../../contract/index.js';

export interface DatabaseInitSqlInput {
  /** `spec.databaseInitSQL`. */
  readonly wanted: { readonly name: string; readonly key: string } | undefined;
  /** `status.databaseInitSQL`: the ConfigMap whose SQL ran without error. */
  readonly recorded: string | undefined;
  /** The last run: this agent's own, or else the cluster status's (a previous primary's). */
  readonly lastRun: DatabaseInitSqlRun | undefined;
}

/** Read the ConfigMap's key and decide with its text ({@link shouldRunSql}), or do nothing. */
export function shouldReadInitSql(input: DatabaseInitSqlInput): boolean {
  if (!input.wanted) return false;
  if (input.recorded === input.wanted.name) return false;
  // This primary's own success, before the operator copied it to the status.
  const run = input.lastRun;
  return !(run?.result === 'Succeeded' && run.configMap === input.wanted.name && run.key === input.wanted.key);
}

/** Whether the SQL with this digest runs: not when this very text has run before, failed or not. */
export function shouldRunSql(
  wanted: { readonly name: string; readonly key: string },
  sha256: string,
  lastRun: DatabaseInitSqlRun | undefined,
): boolean {
  return !(lastRun && lastRun.configMap === wanted.name && lastRun.key === wanted.key && lastRun.sha256 === sha256);
}
