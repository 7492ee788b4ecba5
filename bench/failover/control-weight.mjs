// The coordination side of a system at a low CPU weight: Kanri's control plane (API server, etcd,
// controller-manager, scheduler, operator) and Patroni's etcd. In a real deployment they run on
// other machines than the database members; here everything shares 2 cores. At a takeover Kanri's
// control plane wakes (the Lease, Pod labels, status, the operator's reconciles): about 0.6 of a
// core in the 300 ms around it, against 0.03 before, sampled on 2026-12-04. That slows the client's
// rounds of connection attempts (20 ms at rest, 78–147 ms in that window), which a separate control plane
// would not. A cgroup of low weight gives the members the CPU first whenever both want it.
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const V1 = '/sys/fs/cgroup/cpu';
const V2 = '/sys/fs/cgroup';

/**
 * A cpu cgroup at a tenth of the default weight (v1 `cpu.shares` 102, v2 `cpu.weight` 10), or
 * undefined without root or a cpu controller. `place(pids, 'low' | 'normal')` moves the processes
 * in or back to the root group; `remove()` moves everything back and deletes the group.
 *
 * @example
 * const group = openControlWeight();
 * group?.place(await system.controlPids(), 'low');
 */
export function openControlWeight(name = `kanri-bench-control-${process.pid}`) {
  const v1 = existsSync(join(V1, 'cpu.shares'));
  const root = v1 ? V1 : existsSync(join(V2, 'cgroup.subtree_control')) ? V2 : undefined;
  if (!root) return undefined;
  const dir = join(root, name);
  try {
    if (!v1) writeFileSync(join(V2, 'cgroup.subtree_control'), '+cpu');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, v1 ? 'cpu.shares' : 'cpu.weight'), v1 ? '102' : '10');
  } catch {
    return undefined;
  }
  const moved = new Set();
  const move = (pid, to) => {
    try {
      writeFileSync(join(to, 'cgroup.procs'), String(pid));
      return true;
    } catch {
      return false; // exited
    }
  };
  return {
    place(pids, weight) {
      for (const pid of pids.filter(Boolean)) {
        if (weight === 'low' && move(pid, dir)) moved.add(pid);
        if (weight === 'normal' && move(pid, root)) moved.delete(pid);
      }
    },
    remove() {
      for (const pid of moved) move(pid, root);
      moved.clear();
      try {
        rmdirSync(dir);
      } catch {
        // a process still inside (it is killed with its system) or already gone
      }
    },
  };
}
