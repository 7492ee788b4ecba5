// A Pod's processes as the machine sees them, for every system alike: each container's PIDs come
// from its cgroup on the node (RealNode.containerPids), so nothing depends on what the image has
// (no `kill` or `ps` in it, or a different data directory per system).
import { readFileSync } from 'node:fs';
import { procStat } from '../failover/processes.mjs';
import { memoryOf } from '../memory/lib.mjs';

const commOf = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
};

/**
 * The postmaster among `table` ([{ pid, ppid, comm }]): the `postgres` whose parent is no
 * `postgres` (backends and auxiliary processes are its children). Pure.
 *
 * @example
 * findPostmaster([{ pid: 7, ppid: 1, comm: 'postgres' }, { pid: 9, ppid: 7, comm: 'postgres' }]); // 7
 */
export function findPostmaster(table) {
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const roots = table.filter((p) => p.comm === 'postgres' && byPid.get(p.ppid)?.comm !== 'postgres');
  if (roots.length !== 1) return undefined;
  return roots[0].pid;
}

/** Every process of `pod` (an API object) on its real node: [{ pid, ppid, comm, container }]. */
export async function podProcesses(cp, pod) {
  const node = cp.realNodes.find((n) => n.name === pod.spec?.nodeName);
  if (!node) throw new Error(`Pod ${pod.metadata.name} is not on a real node (${pod.spec?.nodeName ?? 'unscheduled'})`);
  const table = [];
  for (const status of pod.status?.containerStatuses ?? []) {
    if (!status.containerID || !status.state?.running) continue;
    for (const pid of await node.containerPids(status.containerID)) {
      const stat = procStat(pid);
      const comm = commOf(pid);
      if (stat && comm) table.push({ pid, ppid: stat.ppid, comm, container: status.name });
    }
  }
  return table;
}

/** SIGKILLs the postmaster of `pod`, as the OOM killer would; returns its PID. */
export async function killPostmaster(cp, pod) {
  const pid = findPostmaster(await podProcesses(cp, pod));
  if (!pid) throw new Error(`no single postmaster found in Pod ${pod.metadata.name}`);
  process.kill(pid, 'SIGKILL');
  return pid;
}

/**
 * A Pod's memory in bytes: `total`, `postgres` (the postmaster and every process under it) and
 * `overhead` (the rest: the HA process and its helpers), each as summed RSS and as summed PSS
 * (`pss`). RSS is the headline: PSS divides a shared page among the processes that map it, so a
 * Node.js operator's PSS falls as more agents on the machine map the same `node` binary, which
 * says nothing about the operator.
 */
export async function podMemory(cp, pod) {
  const table = await podProcesses(cp, pod);
  const postmaster = findPostmaster(table);
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const underPostmaster = (p) => {
    for (let q = p; q; q = byPid.get(q.ppid)) if (q.pid === postmaster) return true;
    return false;
  };
  const sum = { total: 0, postgres: 0 };
  const pss = { total: 0, postgres: 0 };
  for (const p of table) {
    const m = memoryOf(p.pid);
    if (!m) continue;
    sum.total += m.rss;
    pss.total += m.pss;
    if (postmaster && underPostmaster(p)) {
      sum.postgres += m.rss;
      pss.postgres += m.pss;
    }
  }
  return {
    total: sum.total,
    postgres: sum.postgres,
    overhead: sum.total - sum.postgres,
    pss: { ...pss, overhead: pss.total - pss.postgres },
    processes: table.length,
  };
}
