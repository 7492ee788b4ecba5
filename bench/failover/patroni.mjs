// The Patroni side of the failover benchmark: one etcd (the binary @kanri/testenv builds) and three
// Patroni members, each running PostgreSQL 15 on its own loopback address, with the etcd3 store,
// failsafe_mode on and the HA timings of Kanri's defaults as far as Patroni takes them
// (patroni-release.mjs). Patroni is 4.1.x from PyPI (patroni-requirements.txt) in a virtual
// environment in the Kanri cache; the `patroni3` system runs Debian's 3.0.2 instead. Patroni and
// its postgres run as the `postgres` OS user when the driver is root (postgres refuses to run as root).
//
// Patroni starts postgres in its own session (os.setsid in patroni/postgresql/postmaster.py) so
// that postgres outlives a Patroni crash; a "power loss" of a member therefore SIGKILLs two
// process groups: Patroni's and its postmaster's (with every backend).

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createServingCertificate } from '../../packages/runtime/dist/src/index.js';
import {
  crashProcessTrees,
  leaseLoopbackBlock,
  runnableDirAs,
  startFaultProxy,
} from '../../packages/testenv/dist/src/index.js';
import { ensureAptPackage, ensureVenv } from '../../scripts/bench-lib.mjs';
import { patroniConfig } from './patroni-config.mjs';
import {
  PATRONI_DCS,
  PATRONI_RELEASES,
  parsePatroniVersion,
  patroniTimings,
  pinnedVersion,
  watchdogSetting,
} from './patroni-release.mjs';
import { isPostgresOf, postmasterPid, processGroup } from './postmaster.mjs';
import { freePort, killGroup, pidAlive, startProcess, stopProcess, trackGroup, untrackGroup } from './processes.mjs';
import { queryOnce } from './writer.mjs';

export { PATRONI_DCS } from './patroni-release.mjs';
export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const DIR_PREFIX = 'kanri-bench-patroni-';
// Debian's interpreter, the one its Patroni runs on: readable by the postgres OS user, where a
// pyenv or other interpreter under /root is not (a virtual environment links to its base).
const DEBIAN_PYTHON = '/usr/bin/python3';
const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The command that runs the Patroni of `system` (PATRONI_RELEASES) as `user` (undefined: this
 * process's user), installing it on first use: Debian's package for `patroni3`; otherwise the
 * pinned requirements in a virtual environment in the Kanri cache (bench-lib's ensureVenv, which
 * says when it builds one), staged where `user` can reach it when that is another user, since the
 * cache of root is under /root. Returns the argv and the version it reports.
 */
export async function ensurePatroni(system, { log = () => {}, user } = {}) {
  const release = PATRONI_RELEASES[system];
  if (!release) throw new Error(`${system} is not a Patroni system (${Object.keys(PATRONI_RELEASES).join(', ')})`);
  let argv;
  if (release.executable) {
    ensureAptPackage(release.executable, release.aptPackage, log); // when missing and we are root, as the bootstrap does for PostgreSQL
    argv = [release.executable];
  } else {
    if (!existsSync(DEBIAN_PYTHON))
      throw new Error(`${DEBIAN_PYTHON} is missing: Patroni's virtual environment is made from Debian's python3`);
    const pinned = pinnedVersion(readFileSync(join(root, release.requirements), 'utf8'), 'patroni');
    const venv = await ensureVenv(`patroni-${pinned}`, release.requirements, { log, python: DEBIAN_PYTHON });
    const bin = user ? runnableDirAs(user, join(venv.dir, 'bin')) : join(venv.dir, 'bin');
    // The entry script run by the environment's python: its #! line names the directory pip
    // built it in, which ensureVenv then renamed (and the stage moves it again).
    argv = [join(bin, 'python'), join(bin, 'patroni')];
  }
  const [command, ...args] = argv;
  let printed = null;
  try {
    printed = execFileSync(command, [...args, '--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`${argv.join(' ')} --version failed: ${error.stderr || error.message}`);
  }
  const version = parsePatroniVersion(printed);
  if (!version) throw new Error(`${argv.join(' ')} --version printed no version: ${printed}`);
  return { argv, version, source: release.source };
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

/** The version every member's REST API reports (GET /patroni), or a list when they differ. */
async function runningVersion(members) {
  const versions = await Promise.all(
    members.map(async (m) => {
      const res = await fetch(`${m.api}/patroni`, { signal: AbortSignal.timeout(2_000) });
      return (await res.json()).patroni?.version ?? null;
    }),
  );
  return new Set(versions).size === 1 ? versions[0] : versions.join(', ');
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
  // Which Patroni (PATRONI_RELEASES): `patroni` 4.1.x from PyPI, `patroni3` Debian's 3.0.2.
  system: systemName = 'patroni',
  sync = false,
  log = () => {},
  members = 3,
  dcsProxy = false,
  memberDisk = undefined,
  // Patroni's failsafe_mode: a leader that cannot reach the DCS keeps running while every member's
  // REST API answers its POST /failsafe, as Kanri's failsafe mode does. Off in Patroni's own
  // defaults, but what its documentation recommends since 3.0 and issue 39 asks the benchmarks
  // to run; off only on request (--no-patroni-failsafe).
  failsafeMode = true,
  // initdb's --wal-segsize in MiB; undefined: postgres's default, 16 (wal-segments.mjs).
  walSegmentMiB = undefined,
} = {}) {
  await sweepStaleRuns(log);
  const user = postgresUser();
  const patroni = await ensurePatroni(systemName, { log, user: user.uid === undefined ? undefined : 'postgres' });
  const timings = patroniTimings(PATRONI_DCS, patroni.version);
  for (const change of timings.changed) log(`${systemName}: ${change}`);
  const watchdog = watchdogSetting({ devicePresent: existsSync('/dev/watchdog') });
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

  const config = (m) =>
    patroniConfig({
      member: m,
      etcdHost: m.dcsProxy ? `127.0.0.1:${m.dcsProxy.port}` : `127.0.0.1:${clientPort}`,
      viaProxy: Boolean(m.dcsProxy),
      pgBin: PG_BIN,
      timings,
      failsafeMode,
      watchdogMode: watchdog.mode,
      sync,
      walSegmentMiB,
      credentials,
      replicationPassword,
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
    m.proc = startProcess(patroni.argv[0], [...patroni.argv.slice(1), file], {
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
    name: systemName,
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
      // What runs: the version the leader's REST API reports once the cluster is up (below).
      patroniVersion: null,
      patroniSource: patroni.source,
      store: 'etcd3',
      ttl: timings.ttl,
      loop_wait: timings.loop_wait,
      retry_timeout: timings.retry_timeout,
      maximum_lag_on_failover: PATRONI_DCS.maximum_lag_on_failover,
      // Where Patroni's rules made these differ from Kanri's timings (PATRONI_DCS).
      timingsChanged: timings.changed,
      failsafe_mode: failsafeMode,
      watchdog,
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
    system.settings.patroniVersion = await runningVersion(all);
    if (system.settings.patroniVersion !== patroni.version)
      throw new Error(
        `${systemName}: installed ${patroni.version}, but the members run ${system.settings.patroniVersion}`,
      );
  } catch (error) {
    const tails = await Promise.all(all.map((m) => system.logTail(m.name, 8)));
    await system.stop().catch(() => {});
    error.message += `\n${tails.map((t, i) => `--- ${all[i].name}\n${t}`).join('\n')}`;
    throw error;
  }
  return system;
}
