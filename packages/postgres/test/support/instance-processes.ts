/**
 * The processes of one instance on a process node: the keeper (the container's first process), the
 * agent it runs, and the postmaster it runs for the agent. Found by PID (the node's container, the
 * parent links in /proc, postgres's own postmaster.pid), never by name, so that a test can signal
 * exactly one of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { ControlPlane } from '@kanri/testenv';
import { nodeOf, sql } from './failover-env.js';

export interface InstanceProcesses {
  readonly keeper: number;
  readonly agent: number;
  readonly postmaster: number;
}

/** The PIDs whose parent is `pid`, from /proc (processes that exit while it is read are left out). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name (field 2) may hold spaces and parentheses: the fields after it start at the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(name));
    } catch {
      // Exited since readdir.
    }
  }
  return children;
}

/** The postmaster's PID as postgres itself records it (postmaster.pid, first line). */
export async function postmasterPid(ip: string, password: string): Promise<number> {
  const [row] = await sql<{ pid: number }>(
    ip,
    password,
    "SELECT split_part(pg_read_file('postmaster.pid'), E'\\n', 1)::int AS pid",
  );
  if (!row) throw new Error(`no postmaster.pid on ${ip}`);
  return row.pid;
}

/** The keeper, agent and postmaster of `pod`, whose postgres answers on `ip`. */
export async function instanceProcesses(
  cp: ControlPlane,
  pod: string,
  ip: string,
  password: string,
): Promise<InstanceProcesses> {
  const container = nodeOf(cp, pod)
    .containers()
    .find((c) => c.pod === pod && !c.init && c.pid !== undefined);
  if (container?.pid === undefined) throw new Error(`${pod} has no running container`);
  const keeper = container.pid;
  const postmaster = await postmasterPid(ip, password);
  const others = childrenOf(keeper).filter((pid) => pid !== postmaster);
  if (!childrenOf(keeper).includes(postmaster))
    throw new Error(`${pod}'s postmaster ${postmaster} is not its keeper's`);
  if (others.length !== 1)
    throw new Error(`${pod}'s keeper ${keeper} has children ${others.join(', ')} besides postgres`);
  return { keeper, agent: others[0] as number, postmaster };
}

/** The log of `pod`'s container (keeper, agent and postgres lines, every run). */
export function containerLog(cp: ControlPlane, pod: string): string {
  const container = nodeOf(cp, pod)
    .containers()
    .find((c) => c.pod === pod && !c.init);
  return container ? readFileSync(container.logFile, 'utf8') : '';
}
