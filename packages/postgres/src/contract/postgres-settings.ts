/** Rules for postgresql.conf shared by the operator (which renders it) and the agent (which writes it). */

/**
 * Settings the agent always sets itself (replication, fencing and the Pod's network depend on
 * them). The API refuses them in `spec.config.parameters`, so no value is silently dropped.
 */
export const AGENT_OWNED_SETTINGS = [
  'listen_addresses',
  'port',
  'unix_socket_directories',
  'unix_socket_permissions',
  'cluster_name',
  'hot_standby',
  'wal_level',
  'max_wal_senders',
  'max_replication_slots',
  'wal_log_hints',
  'logging_collector',
  'log_destination',
  'primary_conninfo',
  'primary_slot_name',
  'synchronous_standby_names',
  'archive_mode',
  'archive_command',
  // The agent serves the operator's certificates (contract/postgres-tls.ts).
  'ssl',
  'ssl_cert_file',
  'ssl_key_file',
  'ssl_ca_file',
] as const;
export type AgentOwnedSetting = (typeof AGENT_OWNED_SETTINGS)[number];

/** How postgres's configuration parser reads an escaped control character inside quotes. */
const CONF_ESCAPES: Readonly<Record<string, string>> = { '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't' };

/**
 * A postgresql.conf value: single-quoted, with backslashes and quotes escaped, and control
 * characters written as postgres's escapes (`\n`, or octal), so no value can end its line early
 * or smuggle in another setting.
 *
 * @example
 * ```ts
 * quoteConfValue("it's"); // "'it''s'"
 * quoteConfValue('a\nb'); // "'a\\nb'": one line, which postgres reads as a, newline, b
 * ```
 */
export function quoteConfValue(value: string): string {
  const escaped = value
    .replace(/\\/g, '\\\\')
    .replace(/'/g, "''")
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
    .replace(/[\x00-\x1f\x7f]/g, (c) => `\\${CONF_ESCAPES[c] ?? c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  return `'${escaped}'`;
}

/**
 * A custom setting the operator adds to the rendered parameters: a hash of the rest. What postgres
 * answers for it (`current_setting`) is the configuration it has loaded, so the operator can tell
 * that every instance has reloaded a change before it orders restarts for it.
 */
export const CONFIG_HASH_SETTING = 'kanri.config_hash';
