// The rows of the failure matrix: one failure kind each, injected into the primary's member the
// same way for every system through its fault adapter (kanri-faults.mjs, patroni-faults.mjs).
// `prepare` looks up what the injection needs (PIDs, proxies) before the clock starts, so that
// `inject` is only the fault itself. `lift` ends a fault that lasts (a cut, a stop) and `restore`
// repairs what the trial broke for good (a member that lost power), before the cluster must heal.
//
// `failover`: whether the fault should move the primary; `unlessFailsafe`: not where the system
// runs a failsafe mode, whose replicas vouch for a primary that lost only its store (summary.mjs,
// expectsFailover). A trial of a failover row that ends without one is a failed trial. For the
// other rows (0, 1, 2, 5) the figure is the longest write gap, not the time to a new primary;
// `holdMs` is how long the fault is kept up (or, for a one-off kill, how long the trial watches
// before it waits for writes).
import { postmasterOf } from '../failover/postmaster.mjs';
import { queryOnce } from '../failover/writer.mjs';
import { cut, reconnect } from './proxies.mjs';

const signal = (pid, name) => {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
};

/** A cut that lasts until it is lifted. */
const cutting = (proxies) => ({ inject: () => cut(proxies), lift: () => reconnect(proxies) });

export const FAILURE_KINDS = [
  {
    // The control: the same trial with nothing injected. Its longest write gap is what the machine
    // and the load give with no failure at all, the yardstick for rows 2 and 5's "no write gap".
    row: 0,
    key: 'none',
    title: 'nothing injected (control)',
    failover: false,
    holdMs: 20_000,
    async prepare() {
      return { inject: () => {} };
    },
  },
  {
    row: 1,
    key: 'postgres-killed',
    title: 'postgres killed (kill -9 of the postmaster)',
    failover: false,
    holdMs: 20_000,
    async prepare(system, old) {
      const { pid } = await postmasterOf(old.address, system.credentials);
      return { detail: { postmasterPid: pid }, inject: () => signal(pid, 'SIGKILL') };
    },
  },
  {
    row: 2,
    key: 'agent-killed',
    title: 'agent / Patroni process killed (kill -9)',
    failover: false,
    holdMs: 20_000,
    async prepare(system, old) {
      const pid = await system.faults.agentPid(old);
      return { detail: { agentPid: pid }, inject: () => system.faults.killAgent(old, pid) };
    },
  },
  {
    row: 3,
    key: 'power-loss',
    title: 'host power loss',
    failover: true,
    async prepare(system, old) {
      return { inject: () => system.kill(old.name), restore: () => system.restore(old.name) };
    },
  },
  {
    row: 4,
    key: 'cut-off',
    title: 'primary cut off from the API server / DCS',
    failover: true,
    unlessFailsafe: true,
    async prepare(system, old) {
      return cutting(await system.faults.memberProxies(old));
    },
  },
  {
    row: 5,
    key: 'store-down',
    title: 'API server / DCS unreachable for 60 s (every member)',
    failover: false,
    holdMs: 60_000,
    async prepare(system) {
      return cutting(await system.faults.storeProxies());
    },
  },
  {
    row: 6,
    key: 'agent-stalled',
    title: 'agent / Patroni stalled (SIGSTOP), resumed once decided',
    failover: true,
    async prepare(system, old) {
      const pid = await system.faults.agentPid(old);
      return {
        detail: { agentPid: pid },
        inject: () => signal(pid, 'SIGSTOP'),
        lift: () => signal(pid, 'SIGCONT'),
      };
    },
  },
  {
    row: 7,
    key: 'disk-full',
    title: "the primary's disk full",
    failover: true,
    // Every member's data on a filesystem of its own (small-disk.mjs): the bench mounts them when this row runs.
    needsDisks: true,
    async prepare(system, old) {
      const [{ dir }] = await queryOnce(
        old.address,
        system.credentials,
        "select current_setting('data_directory') as dir",
      );
      const disk = system.disks?.find((d) => dir.startsWith(`${d.dir}/`));
      if (!disk) throw new Error(`${old.name}: its data directory ${dir} is on none of the member disks`);
      let taken;
      return {
        detail: { disk: disk.dir },
        inject: async () => {
          taken = await disk.fill();
        },
        lift: async () => {
          await disk.free();
          return taken;
        },
        get filledBytes() {
          return taken;
        },
      };
    },
  },
];
