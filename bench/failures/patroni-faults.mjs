// The failure injections of bench:failures on the Patroni side: Patroni's own process (the
// member's `proc`, a process group of its own; its postgres runs in another session) and the
// per-member fault proxies in front of etcd (`startPatroniSystem({ dcsProxy: true })`).
import { stopProcess } from '../failover/processes.mjs';

/** @param system a Patroni system (failover/patroni.mjs) started with `dcsProxy` */
export function patroniFaults(system) {
  const memberOf = (member) => {
    const m = system.members.find((x) => x.name === member.name);
    if (!m?.proc?.pid) throw new Error(`${member.name}: Patroni is not running`);
    return m;
  };
  const proxiesOf = (ms) => {
    const proxies = ms.map((m) => m.dcsProxy);
    if (proxies.some((p) => !p)) throw new Error('Patroni was started without dcsProxy');
    return proxies;
  };
  return {
    async agentPid(member) {
      return memberOf(member).proc.pid;
    },
    /**
     * SIGKILL of Patroni alone, then a restart the moment it has exited, as systemd's
     * `Restart=always` (100 ms) or a container runtime would; its postgres keeps running.
     */
    async killAgent(member, pid) {
      const m = memberOf(member);
      process.kill(pid, 'SIGKILL');
      // Its group held Patroni alone (postgres is in its own session): nothing else is killed here.
      await stopProcess(m.proc);
      await system.restore(m.name);
    },
    async memberProxies(member) {
      return proxiesOf([memberOf(member)]);
    },
    async storeProxies() {
      return proxiesOf(system.members);
    },
  };
}
