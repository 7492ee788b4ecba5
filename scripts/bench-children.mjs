// The benchmark drivers' child processes (contenders, builds): each dies with the driver
// (parent-death signal; setpriv execs, so the PID is the command's own), its output is collected,
// and every one still running is SIGKILLed by PID when the driver exits or is stopped.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/** Thrown where a driver was stopped (SIGINT/SIGTERM): its flow unwinds quietly while the signal handler cleans up. */
export class Stopping extends Error {}

/**
 * The children of one driver.
 *
 * @example
 * const children = new Children(root);
 * const build = await children.run('go', ['build', '-o', binary, '.'], { cwd });
 * const proc = children.start(binary, [], { env });
 * await proc.exited;
 */
export class Children {
  /** Set by the driver's signal handler: nothing new starts. */
  stopping = false;
  #live = new Set();
  #cwd;

  constructor(cwd) {
    this.#cwd = cwd;
    process.on('exit', () => this.killAll());
  }

  killAll() {
    for (const child of this.#live) child.kill('SIGKILL');
  }

  /** Spawns `command`, collecting the tail of its output. `exited` resolves when it has exited. */
  start(command, args, { cwd = this.#cwd, env = process.env, echoStderr = false } = {}) {
    if (this.stopping) throw new Stopping();
    const [cmd, argv] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
    const started = performance.now();
    const child = spawn(cmd, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#live.add(child);
    const proc = { child, pid: child.pid, started, stdout: '', stderr: '', exit: null };
    child.stdout.setEncoding('utf8').on('data', (d) => {
      proc.stdout = (proc.stdout + d).slice(-65536);
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      proc.stderr = (proc.stderr + d).slice(-8192);
      if (echoStderr) process.stderr.write(d);
    });
    proc.exited = new Promise((resolve) => {
      const finish = (code, signal, spawnError) => {
        this.#live.delete(child);
        proc.exit ??= { code, signal, spawnError, wallMs: performance.now() - started };
        resolve(proc.exit);
      };
      child.on('error', (error) => finish(null, null, error));
      child.on('close', (code, signal) => finish(code, signal));
    });
    return proc;
  }

  /** Runs a command to its end (SIGKILLed after `timeoutMs`); `timedOut` says whether it was. */
  async run(command, args, { timeoutMs = 10 * 60_000, ...options } = {}) {
    const proc = this.start(command, args, options);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.child.kill('SIGKILL');
    }, timeoutMs);
    const exit = await proc.exited;
    clearTimeout(timer);
    return { ...exit, timedOut, stdout: proc.stdout, stderr: proc.stderr };
  }
}

let clockTicks;

/** CPU seconds (utime + stime, all threads) and peak RSS (VmHWM) of a live process, or null. */
export function sampleProcess(pid) {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3, state
    const kb = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB$/m)?.[1];
    if (fields[0] === 'Z' || kb == null) return null; // a zombie has no memory left to read
    return { cpuSeconds: (Number(fields[11]) + Number(fields[12])) / clockTicks, maxRssBytes: Number(kb) * 1024 };
  } catch {
    return null;
  }
}
