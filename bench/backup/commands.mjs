// The commands the backup benchmark runs itself: pgBackRest by hand (as the postgres OS user, as
// the agent runs it) and Debian's pgbench against the primary's Service address. Every child is
// tracked by PID so that the driver can end the ones still running, and none outlives it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PGBENCH = '/usr/lib/postgresql/15/bin/pgbench';

const children = new Set();

/** Ends every command still running (SIGTERM by PID, then SIGKILL). */
export async function killCommands() {
  for (const child of children) {
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {}
  }
  const deadline = Date.now() + 5_000;
  while (children.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const child of children) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {}
  }
}

/** Runs a command to its end; resolves its exit code, output and wall time (never rejects on exit codes). */
export function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d;
    });
    child.once('error', (error) => {
      children.delete(child);
      reject(error);
    });
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

let postgresUser;
/** The postgres OS user's uid and gid (the agent's user: pgBackRest must run as it). */
export function postgresIds() {
  postgresUser ??= {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  };
  return postgresUser;
}

const TIME = '/usr/bin/time';
const CPU_MARK = 'kanri-bench-cpu';

/**
 * `pgbackrest <base> <args>` as the postgres user, as the agent runs it; throws when it fails.
 * With `cpu`, under GNU time: the result's `cpuSeconds` is what it and its local processes used.
 */
export async function pgbackrest(agent, args, { cpu = false } = {}) {
  const argv = [agent.bin, ...agent.baseArgs, ...args];
  const [command, ...rest] = cpu && existsSync(TIME) ? [TIME, '-f', `${CPU_MARK} %U %S`, ...argv] : argv;
  const result = await run(command, rest, {
    ...postgresIds(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/var/lib/postgresql' },
    cwd: '/',
  });
  if (result.code !== 0)
    throw new Error(
      `pgbackrest ${args.join(' ')} failed (exit ${result.code}): ${`${result.stderr}${result.stdout}`.trim().slice(-600)}`,
    );
  const mark = new RegExp(`${CPU_MARK} ([\\d.]+) ([\\d.]+)`).exec(result.stderr);
  return mark ? { ...result, cpuSeconds: { user: Number(mark[1]), system: Number(mark[2]) } } : result;
}

/** The stanza's backups from `pgbackrest info --output=json`, oldest first. */
export async function backupInfo(agent) {
  const { stdout } = await pgbackrest(agent, ['--repo=1', '--output=json', 'info']);
  const stanzas = JSON.parse(stdout.slice(Math.max(0, stdout.indexOf('['))));
  return [...(stanzas.find((s) => s.name === 'db')?.backup ?? [])].sort((a, b) => a.timestamp.stop - b.timestamp.stop);
}

/** Runs pgbench against `target` (`{ host, port, password }`); resolves its TPS and latency, throws when it fails. */
export async function pgbench(target, args) {
  const result = await run(
    PGBENCH,
    ['-h', target.host, '-p', String(target.port), '-U', 'postgres', ...args, 'postgres'],
    {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PGPASSWORD: target.password, PGCONNECT_TIMEOUT: '10' },
    },
  );
  if (result.code !== 0)
    throw new Error(`pgbench ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.trim().slice(-600)}`);
  const number = (re) => {
    const m = re.exec(result.stdout);
    return m ? Number(m[1]) : null;
  };
  return {
    ms: result.ms,
    tps: number(/tps = ([\d.]+) \(without initial connection time\)/),
    latencyMs: number(/latency average = ([\d.]+) ms/),
    transactions: number(/number of transactions actually processed: (\d+)/),
    failed: number(/number of failed transactions: (\d+)/),
  };
}
