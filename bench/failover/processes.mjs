// Child processes for the failover benchmark and the chaos script: every one is started in its own
// process group (so a "power loss" can SIGKILL the group), with a parent-death signal (so it dies
// with the driver even if the driver is killed outright), and tracked so that the driver can kill
// every group it started, by PID, on exit, error or signal.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/** `command args` wrapped so that the process dies with this one (setpriv execs: same PID). */
export function withParentDeathSignal(command, args) {
  return SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
}

/** Process groups started here and not yet known dead: pgid → label. */
const groups = new Map();

/** SIGKILLs a process group (a negative PID); true if it existed. */
export function killGroup(pgid) {
  try {
    process.kill(-pgid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/** `pid`'s parent PID and process group from /proc, or undefined once it is gone. */
export function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command (which may hold spaces and parentheses): state ppid pgrp …
    const [, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(ppid), pgrp: Number(pgrp) };
  } catch {
    return undefined;
  }
}

/** Every living descendant of `pid` (children first found by their parent PID in /proc). */
export function descendants(pid) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (!stat) continue;
    if (!children.has(stat.ppid)) children.set(stat.ppid, []);
    children.get(stat.ppid).push(Number(entry));
  }
  const out = [];
  const walk = (p) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** True while `pid` exists and is not a zombie. */
export function pidAlive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** True while any process of group `pgid` lives. */
export function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** SIGKILLs every group started through {@link startProcess}; synchronous, so safe in 'exit'. */
export function killAllGroups() {
  for (const pgid of groups.keys()) killGroup(pgid);
  groups.clear();
}

process.on('exit', killAllGroups);

/**
 * Starts `command` as the leader of a new process group, its output appended to `logFile`.
 * `uid`/`gid` switch the user (root only). setpriv execs, so the PID is the command's own.
 */
export function startProcess(command, args, { logFile, env = process.env, cwd, uid, gid, label = command } = {}) {
  const fd = logFile ? openSync(logFile, 'a', 0o600) : 'ignore';
  const [cmd, argv] = withParentDeathSignal(command, args);
  const child = spawn(cmd, argv, {
    env,
    cwd,
    uid,
    gid,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  if (typeof fd === 'number') closeSync(fd);
  const pid = child.pid;
  if (pid) groups.set(pid, label);
  const exited = new Promise((resolve) => {
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, pid, exited, label };
}

/** Kills a group started through {@link startProcess} and waits until its leader has exited. */
export async function stopProcess(proc, timeoutMs = 10_000) {
  if (!proc?.pid) return;
  killGroup(proc.pid);
  groups.delete(proc.pid);
  await Promise.race([proc.exited, sleep(timeoutMs)]);
}

/** Registers a process group not started here (postgres started by Patroni) for the final sweep. */
export function trackGroup(pgid, label) {
  groups.set(pgid, label);
}

export function untrackGroup(pgid) {
  groups.delete(pgid);
}

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
