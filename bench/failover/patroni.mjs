// The Patroni side of the failover benchmark: one etcd (the binary @kanri/testenv builds) and three
// Patroni members from Debian's `patroni` package, each running PostgreSQL 15 on its own loopback
// address, with the etcd3 store and the HA timings of Kanri's defaults. Patroni and its postgres
// run as the `postgres` OS user when the driver is root (postgres refuses to run as root).
//
// Patroni starts postgres in its own session (os.setsid in patroni/postgresql/postmaster.py) so
// that postgres outlives a Patroni crash; a "power loss" of a member therefore SIGKILLs two
// process groups: Patroni's and its postmaster's (with every backend).

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServingCertificate } from '../../packages/runtime/dist/src/index.js';
import { crashProcessTrees, leaseLoopbackBlock, startFaultProxy } from '../../packages/testenv/dist/src/index.js';
import { ensureAptPackage } from '../../scripts/bench-lib.mjs';
import { isPostgresOf, postmasterPid, processGroup } from './postmaster.mjs';
import { freePort, killGroup, pidAlive, startProcess, stopProcess, trackGroup, untrackGroup } from './processes.mjs';
import { queryOnce } from './writer.mjs';

export const PATRONI = '/usr/bin/patroni';
export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const DIR_PREFIX = 'kanri-bench-patroni-';

/** Kanri's defaults (PostgresCluster spec.ha) in Patroni's terms; see bench/README.md. */
export const PATRONI_DCS = {
  ttl: 15, // leaseDurationSeconds
  loop_wait: 2, // retryPeriodSeconds
  retry_timeout: 10, // renewDeadlineSeconds
  maximum_lag_on_failover: 16 * 1024 * 1024, // maximumLagOnFailover
};

export function patroniVersion() {
  try {
    return execFileSync(PATRONI, ['--version'], { encoding: 'utf8' })
      .trim()
      .replace(/^patroni\s+/, '');
  } catch {
    return null;
  }
}

function postgresUser() {
  if (process.getuid?.() !== 0) return {};
  const passwd = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f[0] === 'postgres');
  if (!passwd) throw new Error('running as root needs a `postgres` OS user (Debian postgresql-common makes one)');
  return { uid: Number(passwd[2]), gid: Number(passwd[3]), home: passwd[5] };
}

/**
 * Removes what an earlier run killed outright left behind: its postgres instances (in their own
 * sessions, so the parent-death signal missed them) and its directory.
 */
async function sweepStaleRuns(log) {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(DIR_PREFIX))) {
    const dir = join(tmpdir(), name);
    let owner;
    try {
      owner = JSON.parse(await readFile(join(dir, 'owner.json'), 'utf8')).pid;
      process.kill(owner, 0);
      continue; // its driver still runs
    } catch (error) {
      if (owner && error.code === 'EPERM') continue;
    }
    for (const member of readdirSync(dir).filter((n) => /^m\d$/.test(n))) {
      const pid = postmasterPid(join(dir, member, 'data'));
      const group = pid && isPostgresOf(pid, dir) ? processGroup(pid) : undefined;
      if (group) killGroup(group);
    }
    log(`removing ${dir} left by an earlier run`);
    await rm(dir, { recursive: true, force: true });
  }
}

async function getStatus(url, timeoutMs = 1_000) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * Starts etcd and three Patroni members; resolves once one is the leader and two replicas stream.
 * Returns the system adapter the trial runner drives. `dcsProxy` puts a fault proxy between each
 * member and etcd (`member.dcsProxy`), as Kanri's `apiProxy` does between each node and the API
 * server, so that one member, or all, can be cut off the store. `memberDisk(dir, owner)` mounts
 * a filesystem for each member's data at `dir` (its `disk`; data_dir is a directory on it).
 */
export async function startPatroniSystem({
  sync = false,
  log = () => {},
  members = 3,
  dcsProxy = false,
  memberDisk = undefined,
  // Patroni's failsafe_mode (off by default): a leader that cannot reach the DCS keeps running
  // while every member's REST API answers its POST /failsafe, as Kanri's failsafe mode does.
  failsafeMode = false,
  // initdb's --wal-segsize in MiB; undefined: postgres's default, 16 (wal-segments.mjs).
  walSegmentMiB = undefined,
} = {}) {
  ensureAptPackage(PATRONI, 'patroni', log); // when missing and we are root, as the bootstrap does for PostgreSQL
  await sweepStaleRuns(log);
  const user = postgresUser();
  const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
  await writeFile(join(dir, 'owner.json'), JSON.stringify({ pid: process.pid }));
  if (user.uid !== undefined) await chown(dir, user.uid, user.gid);
  const { block, release } = await leaseLoopbackBlock();
  const credentials = { user: 'postgres', password: randomBytes(24).toString('base64url'), database: 'postgres' };
  const replicationPassword = randomBytes(24).toString('base64url');

  // etcd: the binary @kanri/testenv builds and caches.
  const { ensureBinaries } = await import('../../packages/testenv/dist/src/index.js');
  const { etcd } = await ensureBinaries({ binaries: ['etcd'] });
  const clientPort = await freePort();
  const peerPort = await freePort();
  const etcdDir = join(dir, 'etcd');
  await mkdir(etcdDir, { mode: 0o700 });
  const etcdProc = startProcess(
    etcd,
    [
      '--name=bench',
      `--data-dir=${join(etcdDir, 'data')}`,
      `--listen-client-urls=http://127.0.0.1:${clientPort}`,
      `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=bench=http://127.0.0.1:${peerPort}`,
      // As @kanri/testenv runs the etcd behind Kanri's API server: both stores alike, so that
      // neither system's lock write pays an fsync the other does not.
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    { logFile: join(etcdDir, 'etcd.log'), label: 'etcd' },
  );
  for (let i = 0; (await getStatus(`http://127.0.0.1:${clientPort}/health`)) !== 200; i++) {
    if (i > 100) throw new Error(`etcd did not become healthy; see ${join(etcdDir, 'etcd.log')}`);
    await sleep(100);
  }

  const member = (i) => {
    const name = `m${i + 1}`;
    const ip = `127.${block}.0.${i + 1}`;
    const mdir = join(dir, name);
    return {
      name,
      ip,
      dir: mdir,
      dataDir: join(mdir, ...(memberDisk ? ['disk', 'data'] : ['data'])),
      address: `${ip}:5432`,
      api: `http://${ip}:8008`,
      logFile: join(mdir, 'patroni.log'),
      proc: undefined,
      postmaster: undefined,
      dcsProxy: undefined,
      disk: undefined,
    };
  };
  const all = Array.from({ length: members }, (_, i) => member(i));
  for (const m of dcsProxy ? all : []) m.dcsProxy = await startFaultProxy(`http://127.0.0.1:${clientPort}`);

  const config = (m) => ({
    scope: 'kanri-bench',
    namespace: '/kanri-bench/',
    name: m.name,
    log: { level: 'INFO' },
    restapi: { listen: `${m.ip}:8008`, connect_address: `${m.ip}:8008` },
    // use_proxies: without it Patroni asks etcd for its members and connects to their advertised
    // URLs, past the proxy.
    etcd3: m.dcsProxy
      ? { hosts: [`127.0.0.1:${m.dcsProxy.port}`], use_proxies: true }
      : { hosts: [`127.0.0.1:${clientPort}`] },
    bootstrap: {
      dcs: {
        ...PATRONI_DCS,
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
      bin_dir: PG_BIN,
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
  });

  const startMember = async (m) => {
    await mkdir(m.dir, { recursive: true, mode: 0o700 });
    if (memberDisk && !m.disk) m.disk = await memberDisk(join(m.dir, 'disk'), user);
    const file = join(m.dir, 'patroni.yml');
    const tls = await createServingCertificate({ ipAddresses: [m.ip] });
    await writeFile(join(m.dir, 'server.crt'), tls.certPem, { mode: 0o600 });
    await writeFile(join(m.dir, 'server.key'), tls.keyPem, { mode: 0o600 });
    // YAML is a superset of JSON; the file holds passwords, so 0600 and owned by the member's user.
    await writeFile(file, JSON.stringify(config(m), null, 2), { mode: 0o600 });
    if (user.uid !== undefined) {
      for (const owned of [m.dir, file, join(m.dir, 'server.crt'), join(m.dir, 'server.key')])
        await chown(owned, user.uid, user.gid);
    }
    m.proc = startProcess(PATRONI, [file], {
      logFile: m.logFile,
      uid: user.uid,
      gid: user.gid,
      cwd: m.dir,
      env: { PATH: process.env.PATH, HOME: m.dir, LANG: 'C.UTF-8', PYTHONUNBUFFERED: '1' },
      label: `patroni ${m.name}`,
    });
    if (user.uid !== undefined) await chown(m.logFile, user.uid, user.gid).catch(() => {});
    m.postmaster = undefined;
  };

  /** The process group of a running member's postgres (also registered for the final sweep). */
  const trackPostmaster = (m) => {
    const pid = postmasterPid(m.dataDir);
    const group = pid && isPostgresOf(pid, dir) ? processGroup(pid) : undefined;
    if (group && group !== m.postmaster) {
      if (m.postmaster) untrackGroup(m.postmaster);
      m.postmaster = group;
      trackGroup(group, `postgres ${m.name}`);
    }
    return m.postmaster;
  };

  const leaders = async () => {
    const codes = await Promise.all(all.map((m) => getStatus(`${m.api}/leader`, 500)));
    return all.filter((_, i) => codes[i] === 200);
  };

  const waitFor = async (what, probe, timeoutMs = 180_000) => {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
      try {
        const value = await probe();
        if (value) return value;
      } catch (error) {
        last = error;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
      await sleep(250);
    }
  };

  /** The leader whose postgres accepts writes, with its streaming replicas. */
  const health = async () => {
    const [leader, ...others] = await leaders();
    if (!leader || others.length) return undefined;
    const rows = await queryOnce(
      leader.address,
      credentials,
      "select pg_is_in_recovery() as r, (select count(*) from pg_stat_replication where state = 'streaming')::int as n",
    );
    return { leader, streaming: rows[0].n, inRecovery: rows[0].r };
  };

  const system = {
    name: 'patroni',
    credentials,
    /** The DCS, etcd (control-weight.mjs). */
    controlPids() {
      return [etcdProc.pid];
    },
    dir,
    members: all,
    get disks() {
      return all.map((m) => m.disk).filter(Boolean);
    },
    settings: {
      store: 'etcd3',
      ...PATRONI_DCS,
      failsafe_mode: failsafeMode,
      synchronous_mode: sync,
      synchronous_mode_strict: sync,
      use_pg_rewind: true,
      walSegmentMiB: walSegmentMiB ?? 'postgres default (16)',
    },
    /** Addresses of members whose REST API says they hold the leader key. */
    async candidates() {
      return (await leaders()).map((m) => m.address);
    },
    async instances() {
      return all.map((m) => ({ name: m.name, address: m.address }));
    },
    async primary() {
      const h = await health();
      if (!h || h.inRecovery) throw new Error('no writable leader');
      return { name: h.leader.name, address: h.leader.address };
    },
    /** When the new leader took the leader key, from its log ("acquiring session lock"). */
    async timeline(_mark, killedWall, newAddress) {
      const m = all.find((x) => x.address === newAddress);
      const text = await readFile(m.logFile, 'utf8');
      // Patroni logs local time ("2026-01-01 12:00:00,123"); Node reads a date without a zone as local too.
      const times = [...text.matchAll(/^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3}) INFO: promoted self to leader/gm)]
        .map((x) => new Date(`${x[1]}T${x[2]}.${x[3]}`).getTime())
        .filter((t) => t >= killedWall - 1_000);
      return { takeoverMs: times.length ? times[0] - killedWall : null };
    },
    /**
     * Power loss: Patroni, its postmaster and every backend frozen at one instant, then killed,
     * exactly as a Kanri process node crashes (testenv's crashProcessTrees), so that both lose
     * the same asynchronous commits to the same freeze.
     */
    async kill(name) {
      const m = all.find((x) => x.name === name);
      const pid = postmasterPid(m.dataDir);
      const postmaster = pid && isPostgresOf(pid, dir) ? pid : undefined;
      const group = trackPostmaster(m);
      const { frozenBy } = crashProcessTrees([m.proc.pid, postmaster].filter(Boolean));
      if (group) killGroup(group);
      killGroup(m.proc.pid);
      await stopProcess(m.proc);
      if (group) untrackGroup(group);
      for (let i = 0; postmaster && pidAlive(postmaster) && i < 500; i++) await sleep(10);
      return { frozenBy };
    },
    async restore(name) {
      await startMember(all.find((x) => x.name === name));
    },
    /** One writable leader, `members - 1` replicas streaming, every member's postmaster known. */
    async waitHealthy(timeoutMs = 180_000) {
      await waitFor(
        `Patroni: a leader streaming to ${members - 1} replicas`,
        async () => {
          const h = await health();
          return h && !h.inRecovery && h.streaming === members - 1;
        },
        timeoutMs,
      );
      for (const m of all) trackPostmaster(m);
    },
    async stop() {
      for (const m of all) {
        // Patroni first, so that it cannot start postgres again in between.
        const pm = trackPostmaster(m);
        await stopProcess(m.proc);
        if (pm) killGroup(pm);
        if (pm) untrackGroup(pm);
      }
      for (const m of all) await m.dcsProxy?.close();
      await stopProcess(etcdProc);
      for (const m of all) await m.disk?.unmount();
      await release().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
    /** The tail of a member's Patroni log (for errors). */
    async logTail(name, lines = 20) {
      const m = all.find((x) => x.name === name);
      const text = await readFile(m.logFile, 'utf8').catch(() => '');
      return text.trim().split('\n').slice(-lines).join('\n');
    },
  };

  try {
    log(`etcd on 127.0.0.1:${clientPort}; members on 127.${block}.0.1–${members}, data in ${dir}`);
    await startMember(all[0]);
    await waitFor('the first Patroni member to bootstrap and lead', async () => (await health())?.leader, 120_000);
    for (const m of all.slice(1)) await startMember(m);
    await system.waitHealthy();
  } catch (error) {
    const tails = await Promise.all(all.map((m) => system.logTail(m.name, 8)));
    await system.stop().catch(() => {});
    error.message += `\n${tails.map((t, i) => `--- ${all[i].name}\n${t}`).join('\n')}`;
    throw error;
  }
  return system;
}
