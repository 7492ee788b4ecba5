// One member's processes and what they hold, pure: which process is which (the HA process, the
// agent it runs, the postmaster, its backends, helpers such as the archive command), and the
// medians over a run of 1 s samples, per role and for the whole member ("the Pod"). Summed RSS
// counts every shared page (the node or python binary, postgres's shared memory) once per process
// that maps it, so the Pod's memory is its summed PSS (each shared page divided among the
// processes that map it); summed private memory is what no other process shares.
import { median, round1 } from '../../scripts/bench-stats.mjs';

/** Roles in the order a table shows them. `ha` adds up the HA side: Kanri's keeper and agent, or Patroni. */
export const ROLES = ['keeper', 'agent', 'patroni', 'postmaster', 'backend', 'helper'];
export const HA_ROLES = new Set(['keeper', 'agent', 'patroni']);

/**
 * Each process of one member, with its role. `table`: [{ pid, ppid, comm }] (every process under
 * `root`, and under `postmaster` when postgres runs in a session of its own, as Patroni starts it).
 * `root` is the member's first process, in `rootRole` ('keeper' or 'patroni'); a direct child of
 * it that is not the postmaster is in `childRole` (the keeper runs the agent so; Patroni runs no
 * such child, so its children are helpers). Under the postmaster, a `postgres` is a backend.
 * Everything else is a helper (the archive command and what it runs, pg_basebackup, pg_rewind).
 *
 * @example
 * classifyProcesses(
 *   [{ pid: 1, ppid: 0, comm: 'node' }, { pid: 2, ppid: 1, comm: 'node' }, { pid: 3, ppid: 1, comm: 'postgres' }],
 *   { root: 1, postmaster: 3, rootRole: 'keeper', childRole: 'agent' },
 * );
 * // [{ pid: 1, role: 'keeper' }, { pid: 2, role: 'agent' }, { pid: 3, role: 'postmaster' }]
 */
export function classifyProcesses(table, { root, postmaster, rootRole, childRole = 'helper' }) {
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const underPostmaster = (p) => {
    for (let q = p; q; q = byPid.get(q.ppid)) if (q.ppid === postmaster) return true;
    return false;
  };
  const roleOf = (p) => {
    if (p.pid === root) return rootRole;
    if (p.pid === postmaster) return 'postmaster';
    if (p.ppid === postmaster && p.comm === 'postgres') return 'backend';
    if (underPostmaster(p)) return 'helper';
    if (p.ppid === root) return childRole;
    return 'helper';
  };
  const seen = new Set();
  const out = [];
  for (const p of table) {
    if (seen.has(p.pid)) continue;
    seen.add(p.pid);
    out.push({ pid: p.pid, role: roleOf(p) });
  }
  return out;
}

/**
 * One sample: per role the number of processes and their summed memory, and the member's total.
 * `processes`: [{ pid, role, rss, pss, private }] in bytes (a process gone before it was read is
 * simply absent).
 */
export function sampleTotals(processes) {
  const zero = () => ({ count: 0, rss: 0, pss: 0, private: 0 });
  const roles = {};
  const pod = zero();
  const ha = zero();
  for (const p of processes) {
    roles[p.role] ??= zero();
    for (const into of [roles[p.role], pod, ...(HA_ROLES.has(p.role) ? [ha] : [])]) {
      into.count++;
      into.rss += p.rss;
      into.pss += p.pss;
      into.private += p.private;
    }
  }
  return { roles, pod, ha };
}

const mib = (bytes) => (bytes == null ? null : round1(bytes / 2 ** 20));
const medians = (totals) => ({
  count: median(totals.map((t) => t.count)),
  rssMiB: mib(median(totals.map((t) => t.rss))),
  pssMiB: mib(median(totals.map((t) => t.pss))),
  privateMiB: mib(median(totals.map((t) => t.private))),
});

/**
 * A member over a run: per role, for its HA side and for the whole member, the median over the
 * samples of the summed figures (a role absent from a sample counts as 0 there: a helper that ran
 * in 1 sample of 30 has a median of 0 and a `peak`), and the peak of the member's summed PSS.
 *
 * @example
 * summarizeMember([sampleTotals([{ pid: 1, role: 'agent', rss: 2 ** 20, pss: 2 ** 20, private: 2 ** 19 }])]);
 */
export function summarizeMember(samples) {
  const roles = {};
  for (const role of ROLES) {
    const totals = samples.map((s) => s.roles[role] ?? { count: 0, rss: 0, pss: 0, private: 0 });
    if (totals.every((t) => t.count === 0)) continue;
    roles[role] = { ...medians(totals), peakPssMiB: mib(Math.max(...totals.map((t) => t.pss))) };
  }
  return {
    samples: samples.length,
    pod: { ...medians(samples.map((s) => s.pod)), peakPssMiB: mib(Math.max(0, ...samples.map((s) => s.pod.pss))) },
    ha: medians(samples.map((s) => s.ha)),
    roles,
  };
}

/**
 * Every member of one system: the median across members of each member's figures (Pod, HA side,
 * and each role's PSS), beside the members themselves.
 */
export function summarizeSystem(members) {
  const across = (pick) => {
    const values = members.map(pick).filter((v) => v != null);
    return round1(median(values));
  };
  const roles = {};
  for (const role of ROLES) {
    if (!members.some((m) => m.roles[role])) continue;
    roles[role] = {
      rssMiB: across((m) => m.roles[role]?.rssMiB ?? 0),
      pssMiB: across((m) => m.roles[role]?.pssMiB ?? 0),
      privateMiB: across((m) => m.roles[role]?.privateMiB ?? 0),
    };
  }
  return {
    pod: {
      rssMiB: across((m) => m.pod.rssMiB),
      pssMiB: across((m) => m.pod.pssMiB),
      privateMiB: across((m) => m.pod.privateMiB),
    },
    ha: {
      rssMiB: across((m) => m.ha.rssMiB),
      pssMiB: across((m) => m.ha.pssMiB),
      privateMiB: across((m) => m.ha.privateMiB),
    },
    roles,
    members,
  };
}

/** The lines a reader compares: per system the Pod, the HA side and each role, median across members. */
export function formatComparison(systems) {
  const lines = [
    'system   part         processes  RSS MiB  PSS MiB  private MiB   (median across members of per-sample sums)',
  ];
  for (const [name, s] of Object.entries(systems)) {
    if (!s) continue;
    const row = (part, r, count = '') =>
      `${name.padEnd(8)} ${part.padEnd(12)} ${String(count).padStart(9)}  ${String(r.rssMiB).padStart(7)}  ${String(r.pssMiB).padStart(7)}  ${String(r.privateMiB).padStart(11)}`;
    lines.push(row('whole Pod', s.pod));
    lines.push(row('HA side', s.ha));
    for (const [role, r] of Object.entries(s.roles)) {
      const counts = s.members.map((m) => m.roles[role]?.count ?? 0);
      lines.push(row(role, r, median(counts)));
    }
  }
  return lines.join('\n');
}
