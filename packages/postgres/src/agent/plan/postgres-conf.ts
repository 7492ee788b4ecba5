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
import { type ConninfoPair, type MemberTarget, memberConninfo, usesPassword } from './member-connection.js';

export { CONFIG_KEY } from '../../contract/index.js';

export const KANRI_CONF = 'kanri.conf';
export const INCLUDE_LINE = `include_if_exists = '${KANRI_CONF}'`;

/** The primary a replica streams from (see member-connection.ts for how it is reached). */
export interface ConnectionToPrimary extends MemberTarget {
  readonly slot: string;
  /** Where the replication password is (see buildPassfile), never the password itself; used only without TLS files. */
  readonly passfile: string;
  readonly applicationName: string;
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
    // Client certificates are verified against the cluster's CA (and the user's replication CA);
    // pg_hba accepts one for the replication user alone (renderPgHba).
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
 * `primary_conninfo` for a replica: the password stays in the passfile (named only without TLS
 * files), so this string (which superusers can SHOW) carries none. Keepalives make a vanished
 * primary noticed in ~20 s, not hours.
 *
 * @example
 * ```ts
 * buildPrimaryConninfo({ ip: '10.0.0.7', serverName: 'hippo-primary.db.svc', tls, slot, passfile, applicationName: 'hippo-1' });
 * ```
 */
export function buildPrimaryConninfo(primary: ConnectionToPrimary): string {
  const passfile: ConninfoPair[] = usesPassword(primary) ? [['passfile', primary.passfile]] : [];
  return memberConninfo(primary, [
    ...passfile,
    ['application_name', primary.applicationName],
    ['connect_timeout', '5'],
    ['keepalives', '1'],
    ['keepalives_idle', '10'],
    ['keepalives_interval', '5'],
    ['keepalives_count', '2'],
  ]);
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
  /** postgres serves TLS: the replication user authenticates by certificate over it (and no other role does). */
  readonly serving: boolean;
  /** spec.tls.required: no network connection without TLS, whoever it is. */
  readonly required: boolean;
}

/**
 * `pg_hba.conf`: the agent's own rules first (its superuser connection over the socket, and
 * streaming_replica's: replication and pg_rewind, which reads the `postgres` database, and nothing
 * else), then the operator's rules or the default. Over TLS the replication user presents its
 * certificate; its password is accepted only without TLS, which spec.tls.required refuses before
 * any rule. No other role is authenticated by certificate: postgres trusts the CA of
 * spec.tls.replicationSecret too, which may be a shared issuer's that names any role, and pg_hba
 * cannot tell which CA issued a certificate.
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
    ...(tls.serving
      ? [`hostssl replication ${REPLICATION_USER} all cert`, `hostssl postgres ${REPLICATION_USER} all cert`]
      : []),
    `host replication ${REPLICATION_USER} all scram-sha-256`,
    `host postgres ${REPLICATION_USER} all scram-sha-256`,
    `host all ${REPLICATION_USER} all reject`,
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
