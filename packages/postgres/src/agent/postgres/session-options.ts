/**
 * The session settings of every connection the agent and its tools make to postgres. A user's
 * `statement_timeout` (or `lock_timeout`, `idle_in_transaction_session_timeout`) in
 * `spec.config.parameters` is for applications; on the agent's own sessions it would cut off a
 * `pg_rewind`, a base backup's `pg_backup_stop` waiting for the archive, or a slow status query
 * under load, and take the instance's HA with it. Startup options override postgresql.conf and the
 * role's settings for that session only.
 */
export const AGENT_SESSION_OPTIONS =
  '-c statement_timeout=0 -c lock_timeout=0 -c idle_in_transaction_session_timeout=0';

/**
 * Makes the tools the agent runs (pg_rewind, pg_basebackup, pgBackRest, psql) connect with the
 * same settings: libpq reads PGOPTIONS, and every child inherits the agent's environment.
 */
export function applySessionOptionsToTools(env: NodeJS.ProcessEnv = process.env): void {
  env.PGOPTIONS = AGENT_SESSION_OPTIONS;
}
