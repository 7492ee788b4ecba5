// One Patroni member's configuration (patroni.yml, written as JSON), pure: the member's
// addresses and directories, its etcd3 store, the DCS settings a new cluster is bootstrapped with
// (patroni-release.mjs's timings, failsafe_mode, synchronous mode) and PostgreSQL's settings,
// which mirror what Kanri's operator and agent give their postgres.
import { join } from 'node:path';
import { PATRONI_DCS } from './patroni-release.mjs';

/**
 * `member`: { name, ip, dir, dataDir }; `etcdHost`: host:port of etcd, or of the member's fault
 * proxy in front of it (`viaProxy`); `timings`: patroniTimings(…); `credentials`: the superuser's.
 *
 * @example
 * patroniConfig({ member, etcdHost: '127.0.0.1:2379', pgBin, timings, failsafeMode: true,
 *   watchdogMode: 'off', sync: false, credentials, replicationPassword });
 */
export function patroniConfig({
  member: m,
  etcdHost,
  viaProxy = false,
  pgBin,
  timings,
  failsafeMode,
  watchdogMode,
  sync,
  walSegmentMiB,
  credentials,
  replicationPassword,
}) {
  return {
    scope: 'kanri-bench',
    namespace: '/kanri-bench/',
    name: m.name,
    log: { level: 'INFO' },
    restapi: { listen: `${m.ip}:8008`, connect_address: `${m.ip}:8008` },
    // use_proxies: without it Patroni asks etcd for its members and connects to their advertised
    // URLs, past the proxy.
    etcd3: viaProxy ? { hosts: [etcdHost], use_proxies: true } : { hosts: [etcdHost] },
    // Off: see watchdogSetting. Patroni's default, `automatic`, would open /dev/watchdog where one exists.
    watchdog: { mode: watchdogMode },
    bootstrap: {
      dcs: {
        ttl: timings.ttl,
        loop_wait: timings.loop_wait,
        retry_timeout: timings.retry_timeout,
        maximum_lag_on_failover: PATRONI_DCS.maximum_lag_on_failover,
        failsafe_mode: failsafeMode,
        // Kanri's synchronous mode (number: 1) is strict with one standby: commits wait rather than go async.
        synchronous_mode: sync,
        synchronous_mode_strict: sync,
        synchronous_node_count: 1,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          // Kanri's agent owns the same settings (wal_log_hints for pg_rewind, room for slots).
          parameters: {
            wal_level: 'replica',
            hot_standby: 'on',
            wal_log_hints: 'on',
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: '512MB',
            // Kanri's operator default (postgres-config.ts): a replica retries its WAL stream after 1 s, not 5.
            wal_retrieve_retry_interval: '1s',
            password_encryption: 'scram-sha-256',
          },
        },
      },
      initdb: [
        'data-checksums',
        { encoding: 'UTF8' },
        { 'auth-local': 'trust' },
        ...(walSegmentMiB ? [{ 'wal-segsize': String(walSegmentMiB) }] : []),
      ],
    },
    postgresql: {
      listen: `${m.ip}:5432`,
      connect_address: `${m.ip}:5432`,
      data_dir: m.dataDir,
      bin_dir: pgBin,
      pgpass: join(m.dir, 'pgpass'),
      authentication: {
        superuser: { username: credentials.user, password: credentials.password },
        replication: { username: 'replicator', password: replicationPassword },
      },
      // TLS as Kanri's postgres serves it (an ECDSA P-256 certificate): the client's sslmode=prefer
      // then negotiates TLS with both systems, and each connection its host search tries costs
      // the same (5–10 ms more than without TLS on this machine).
      parameters: {
        unix_socket_directories: m.dir,
        ssl: 'on',
        ssl_cert_file: join(m.dir, 'server.crt'),
        ssl_key_file: join(m.dir, 'server.key'),
      },
      pg_hba: [
        'local all all trust',
        'host replication replicator 127.0.0.0/8 scram-sha-256',
        'host all all 127.0.0.0/8 scram-sha-256',
      ],
      // A former primary always comes back: rewound, or re-cloned if rewinding fails.
      remove_data_directory_on_rewind_failure: true,
      remove_data_directory_on_diverged_timelines: true,
    },
  };
}
