/**
 * Pure builders of the files the agent writes into PGDATA: `kanri.conf` (the operator's parameters
 * followed by the agent's own settings, which therefore win), `pg_hba.conf`, the include line in
 * `postgresql.conf`, and the replication passfile.
 */
import {
  type AgentOwnedSetting,
  PORT,
  type PostgresTlsFiles,
  quoteConfValue,
  REPLICATION_USER,
  SUPERUSER,
} from '../../contract/index.js';

export { CONFIG_KEY } from '../../contract/index.js';

export const KANRI_CONF = 'kanri.conf';
export const INCLUDE_LINE = `include_if_exists = '${KANRI_CONF}'`;

export interface ConnectionToPrimary {
  readonly host: string;
  readonly slot: string;
  /** Where the replication password is (see buildPassfile), never the password itself. */
  readonly passfile: string;
  readonly applicationName: string;
  /** With the cluster's TLS files, the replica verifies the primary and authenticates by certificate. */
  readonly tls?: PostgresTlsFiles;
}

export interface AgentSettingsInput {
  readonly podIP: string;
  readonly podName: string;
  readonly socketDir: string;
  /** Set on replicas; undefined on the primary (and on a replica that does not know its primary yet). */
  readonly primary?: ConnectionToPrimary;
  /** A replica that does not know its primary yet still names its slot. */
  readonly slot?: string;
  /** Primary: `synchronous_standby_names` (see sync-plan.ts); '' (asynchronous) when unset. */
  readonly synchronousStandbyNames?: string;
  /** The agent's archive command (see pgbackrest-archive-push.ts), `%p` included. */
  readonly archiveCommand: string;
  /** The cluster's TLS files, once the agent has them: postgres serves TLS from then on. */
  readonly tls?: PostgresTlsFiles;
}

/** Settings postgres must have for the agent to work; the operator's ConfigMap cannot override them. */
export function buildAgentSettings(input: AgentSettingsInput): Record<AgentOwnedSetting, string> {
  return {
    listen_addresses: input.podIP,
    port: String(PORT.postgres),
    unix_socket_directories: input.socketDir,
    // The socket directory is private to the Pod; only its own user may connect (local trust is safe).
    unix_socket_permissions: '0700',
    cluster_name: input.podName,
    hot_standby: 'on',
    wal_level: 'replica',
    max_wal_senders: '10',
    max_replication_slots: '10',
    // pg_rewind needs hint bits in WAL (or data checksums): a former primary can then be rewound.
    wal_log_hints: 'on',
    // Logs go to stderr, which the agent reads and forwards (redacted) as its own.
    logging_collector: 'off',
    log_destination: 'stderr',
    primary_conninfo: input.primary ? buildPrimaryConninfo(input.primary) : '',
    primary_slot_name: input.primary?.slot ?? input.slot ?? '',
    // The primary's agent chooses the synchronous standbys and publishes them in the Lease first.
    synchronous_standby_names: input.synchronousStandbyNames ?? '',
    // Always on, because changing it takes a restart: without a repo the archive command reports
    // success at once (no WAL is kept, as with the mode off), and a repo declared later archives
    // without one. The command asks the agent first, so only the Lease holder writes into a repo.
    archive_mode: 'on',
    archive_command: input.archiveCommand,
    // A reload turns TLS on, and picks up renewed certificates, without dropping a connection.
    ssl: input.tls ? 'on' : 'off',
    ssl_cert_file: input.tls?.serverCert ?? 'server.crt',
    ssl_key_file: input.tls?.serverKey ?? 'server.key',
    // Client certificates (the replication user's) are verified against the cluster's CA.
    ssl_ca_file: input.tls?.clientCa ?? '',
  };
}

/** A shell word: single-quoted, so paths with spaces or `$` reach the program as they are. */
function shellWord(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

/**
 * The archive_command line: the agent's archive command under this Node.js, with its control socket.
 *
 * @example
 * ```ts
 * buildArchiveCommand('/usr/bin/node', '/app/agent/pgbackrest-archive-push.js', '/run/postgresql/.s.kanri');
 * // "'/usr/bin/node' '/app/agent/pgbackrest-archive-push.js' '/run/postgresql/.s.kanri' %p"
 * ```
 */
export function buildArchiveCommand(node: string, script: string, socket: string): string {
  return `${[node, script, socket].map(shellWord).join(' ')} %p`;
}

/**
 * A libpq conninfo value: single-quoted with backslash escapes when it holds anything unusual.
 *
 * @example
 * ```ts
 * conninfoValue('/run/a b/ca.crt'); // "'/run/a b/ca.crt'"
 * ```
 */
export function conninfoValue(value: string): string {
  return /^[A-Za-z0-9_.:/-]+$/.test(value) ? value : `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * `primary_conninfo` for a replica: the password stays in the passfile, so this string (which
 * superusers can SHOW) carries none. Keepalives make a vanished primary noticed in ~20 s, not hours.
 */
export function buildPrimaryConninfo(primary: ConnectionToPrimary): string {
  const pairs: [string, string][] = [
    ['host', primary.host],
    ['port', String(PORT.postgres)],
    ['user', REPLICATION_USER],
    ['passfile', primary.passfile],
    ['application_name', primary.applicationName],
    ...replicationTlsPairs(primary.tls),
    ['connect_timeout', '5'],
    ['keepalives', '1'],
    ['keepalives_idle', '10'],
    ['keepalives_interval', '5'],
    ['keepalives_count', '2'],
  ];
  return pairs.map(([key, value]) => `${key}=${conninfoValue(value)}`).join(' ');
}

/**
 * How the replication user's connections (streaming, pg_basebackup) use TLS: with the cluster's
 * files, verify the primary against the server CA (by CA, not name: replicas dial a Pod IP, which
 * the certificate does not carry) and present the client certificate; without them, `prefer`, which
 * falls back to a password over plain TCP when the primary asks for a certificate it cannot give.
 */
function replicationTlsPairs(tls: PostgresTlsFiles | undefined): [string, string][] {
  if (!tls) return [['sslmode', 'prefer']];
  return [
    ['sslmode', 'verify-ca'],
    ['sslrootcert', tls.serverCa],
    ['sslcert', tls.replicationCert],
    ['sslkey', tls.replicationKey],
  ];
}

/**
 * The same as libpq environment variables, for pg_basebackup.
 *
 * @example
 * ```ts
 * replicationTlsEnv(undefined); // { PGSSLMODE: 'prefer' }
 * ```
 */
export function replicationTlsEnv(tls: PostgresTlsFiles | undefined): Record<string, string> {
  const variable: Record<string, string> = {
    sslmode: 'PGSSLMODE',
    sslrootcert: 'PGSSLROOTCERT',
    sslcert: 'PGSSLCERT',
    sslkey: 'PGSSLKEY',
  };
  return Object.fromEntries(replicationTlsPairs(tls).map(([key, value]) => [variable[key] ?? key, value]));
}

/** A .pgpass line for the replication user on any host (`:` and `\` escaped). */
export function buildPassfile(password: string): string {
  const escapeField = (field: string) => field.replace(/\\/g, '\\\\').replace(/:/g, '\\:');
  return `*:*:*:${escapeField(REPLICATION_USER)}:${escapeField(password)}\n`;
}

const KEY_PATTERN = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:=|\s|$)/;

/**
 * `kanri.conf`: the operator's parameters (lines that would set an agent-owned setting are dropped
 * and reported), then the agent's settings.
 *
 * @example
 * ```ts
 * const { text, overridden } = renderKanriConf("shared_buffers = '64MB'\nport = 1\n", { port: '5432' });
 * // overridden: ['port']
 * ```
 */
export function renderKanriConf(
  parameters: string | undefined,
  settings: Readonly<Record<string, string>>,
): { text: string; overridden: string[] } {
  const owned = new Set(Object.keys(settings));
  const overridden: string[] = [];
  const kept: string[] = [];
  for (const line of (parameters ?? '').split('\n')) {
    const key = KEY_PATTERN.exec(line)?.[1]?.toLowerCase();
    if (key !== undefined && owned.has(key)) {
      overridden.push(key);
      continue;
    }
    kept.push(line);
  }
  const text = [
    '# Written by the Kanri instance agent; rewritten on every change. Do not edit.',
    '# Parameters from the cluster configuration:',
    kept.join('\n').trim(),
    '# Settings the agent owns (last, so they win):',
    ...Object.entries(settings).map(([key, value]) => `${key} = ${quoteConfValue(value)}`),
    '',
  ].join('\n');
  return { text, overridden };
}

/**
 * Only for pg_hba.conf written before the agent has the cluster's rules, which its start gate
 * prevents (agent/start-gate.ts): fail closed, nothing from the network past the agent's own
 * replication rules, and local trust on the private socket.
 */
export const DEFAULT_HBA = ['local all all trust', 'host all all all reject'].join('\n');

/** How pg_hba.conf treats TLS. */
export interface HbaTls {
  /** postgres serves TLS: the replication user authenticates by certificate over it. */
  readonly serving: boolean;
  /** spec.tls.required: no network connection without TLS, whoever it is. */
  readonly required: boolean;
}

/**
 * `pg_hba.conf`: the agent's own rules first (its superuser connection over the socket, and
 * replication for streaming_replica), then the operator's rules or the default. Over TLS the
 * replication user presents its certificate; its password is accepted only without TLS, which
 * spec.tls.required refuses before any rule.
 *
 * @example
 * ```ts
 * renderPgHba(undefined, { serving: true, required: true }).includes('hostnossl all all all reject'); // true
 * ```
 */
export function renderPgHba(
  operatorRules: string | undefined,
  tls: HbaTls = { serving: false, required: false },
): string {
  return [
    '# Written by the Kanri instance agent; rewritten on every change. Do not edit.',
    '# The agent:',
    `local all ${SUPERUSER} trust`,
    `local replication ${SUPERUSER} trust`,
    ...(tls.required ? ['hostnossl all all all reject'] : []),
    ...(tls.serving ? [`hostssl replication ${REPLICATION_USER} all cert`] : []),
    `host replication ${REPLICATION_USER} all scram-sha-256`,
    operatorRules === undefined
      ? '# Built-in default (no cluster configuration yet):'
      : '# From the cluster configuration:',
    (operatorRules ?? DEFAULT_HBA).trim(),
    '',
  ].join('\n');
}

/** `postgresql.conf` with the include of kanri.conf as its last line (added once). */
export function withKanriInclude(postgresqlConf: string): string {
  if (postgresqlConf.split('\n').some((line) => line.trim() === INCLUDE_LINE)) return postgresqlConf;
  return `${postgresqlConf.replace(/\n*$/, '\n')}${INCLUDE_LINE}\n`;
}
