/**
 * How a member reaches another member's postgres (streaming, pg_basebackup, pg_rewind), always as
 * the replication user. With the cluster's TLS files: dial the Pod IP (libpq's `hostaddr`), check
 * the server certificate against the cluster's name (`host`, contract memberServerName) with
 * `verify-full`, which libpq does before it sends anything else, and log in by the replication
 * certificate alone (no password goes out). Without them, while the cluster has no certificates
 * yet, the replication password over whatever the server offers. Pure.
 */
import { PORT, type PostgresTlsFiles, REPLICATION_USER } from '../../contract/index.js';

/** Another member's postgres, as this one reaches it. */
export interface MemberTarget {
  /** Its Pod IP: what is dialled. */
  readonly ip: string;
  /** What its server certificate must name (memberServerName): what is verified. */
  readonly serverName: string;
  /** The cluster's TLS files; undefined while this agent has none. */
  readonly tls?: PostgresTlsFiles | undefined;
}

/** One libpq keyword and its value. */
export type ConninfoPair = readonly [keyword: string, value: string];

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
 * The keywords that reach `target` as the replication user: where, who, and how TLS is checked.
 *
 * @example
 * ```ts
 * memberConnectionPairs({ ip: '10.0.0.7', serverName: 'hippo-primary.db.svc', tls });
 * // host=hippo-primary.db.svc hostaddr=10.0.0.7 port=5432 user=streaming_replica sslmode=verify-full …
 * ```
 */
export function memberConnectionPairs(target: MemberTarget): ConninfoPair[] {
  const who: ConninfoPair[] = [
    ['port', String(PORT.postgres)],
    ['user', REPLICATION_USER],
  ];
  const tls = target.tls;
  // `prefer` falls back to plain TCP when the server offers no TLS: there is no name to check yet.
  if (!tls) return [['host', target.ip], ...who, ['sslmode', 'prefer']];
  return [
    ['host', target.serverName],
    ['hostaddr', target.ip],
    ...who,
    ['sslmode', 'verify-full'],
    ['sslrootcert', tls.serverCa],
    ['sslcert', tls.replicationCert],
    ['sslkey', tls.replicationKey],
  ];
}

/**
 * Whether a connection to `target` may carry the replication password: only without TLS files.
 * With them the certificate is the credential, and a server that asks for a password instead is
 * answered with none.
 *
 * @example
 * ```ts
 * if (usesPassword(target)) env.PGPASSWORD = password;
 * ```
 */
export function usesPassword(target: MemberTarget): boolean {
  return target.tls === undefined;
}

/**
 * A conninfo string to `target` with `extra` keywords after the connection's own.
 *
 * @example
 * ```ts
 * memberConninfo(target, [['dbname', 'postgres'], ['connect_timeout', '10']]);
 * ```
 */
export function memberConninfo(target: MemberTarget, extra: readonly ConninfoPair[] = []): string {
  return [...memberConnectionPairs(target), ...extra].map(([key, value]) => `${key}=${conninfoValue(value)}`).join(' ');
}
