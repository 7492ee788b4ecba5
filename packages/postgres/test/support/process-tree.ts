/**
 * Pausing every process of one instance (its agent and the postgres it runs) by PID, as a host
 * that stops answering would: SIGSTOP to the whole tree under the container's first process,
 * SIGCONT to the same PIDs afterwards. Read from /proc; Linux only, as the process nodes are.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { ControlPlane } from '@kanri/testenv';

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly comm: string;
}

function processes(): Proc[] {
  const all: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // The command name may hold spaces and parentheses: the fields follow its last ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    all.push({ pid: Number(entry), ppid, comm });
  }
  return all;
}

/** `root` and every process below it. */
export function processTree(root: number): Proc[] {
  const all = processes();
  const tree: Proc[] = [];
  const walk = (proc: Proc | undefined) => {
    if (!proc) return;
    tree.push(proc);
    for (const child of all.filter((p) => p.ppid === proc.pid)) walk(child);
  };
  walk(all.find((p) => p.pid === root));
  return tree;
}

function containerPid(cp: ControlPlane, pod: string): number {
  const container = cp.processNodes.flatMap((n) => n.containers()).find((c) => c.pod === pod && c.pid !== undefined);
  if (container?.pid === undefined) throw new Error(`${pod} runs no container`);
  return container.pid;
}

/**
 * Takes `pod`'s postgres down while its agent cannot notice: SIGSTOP to the agent's processes,
 * then a fast shutdown (SIGINT) of the postmaster, which closes its connections cleanly (a paused
 * walreceiver would instead leave the primary's walsender blocked in a send). Resolves the PIDs
 * paused, for {@link resume}; resumed, the agent finds postgres gone and starts it again.
 */
export function pauseAgentStopPostgres(cp: ControlPlane, pod: string): number[] {
  const tree = processTree(containerPid(cp, pod));
  const isPostgres = (pid: number) => tree.some((p) => p.pid === pid && p.comm === 'postgres');
  const agent = tree.filter((p) => p.comm !== 'postgres').map((p) => p.pid);
  const postmaster = tree.find((p) => p.comm === 'postgres' && !isPostgres(p.ppid));
  if (!postmaster) throw new Error(`${pod} runs no postgres`);
  for (const pid of agent) process.kill(pid, 'SIGSTOP');
  process.kill(postmaster.pid, 'SIGINT');
  return agent;
}

/** SIGCONTs what {@link pauseAgentStopPostgres} stopped (those still alive). */
export function resume(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // gone already
    }
  }
}
