// The failure injections of bench:failures on the Kanri side, driven from outside: processes are
// found through the process node's container snapshot and /proc, and the API server is cut off
// through the fault proxies of `startKanriSystem({ apiProxy: true, operatorProxy: true })`.
import { readFileSync } from 'node:fs';
import { descendants } from '../failover/processes.mjs';

/** The agent's entry point, as it appears on its command line. */
const AGENT_SCRIPT = /\/agent\/main\.js(\0|$)/;
/**
 * Set in the agent's environment by the keeper, which runs the same entry point
 * (packages/postgres/src/agent/keeper/protocol.ts, AGENT_PROCESS_ENV).
 */
const AGENT_PROCESS_ENV = 'KANRI_AGENT_PROCESS=';

const proc = (pid, file) => {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
};

/** @param system a Kanri system (failover/kanri.mjs) started with both fault proxies */
export function kanriFaults(system) {
  const containerOf = async (member) => {
    const node = await system.nodeOfPod(member.name);
    const container = node.containers().find((c) => c.pod === member.name && c.container === 'postgres' && c.pid);
    if (!container) throw new Error(`${member.name}: no running postgres container on ${node.name}`);
    return { node, container };
  };
  return {
    /**
     * The agent process: of the processes of the Pod's container that run the agent's main.js, the
     * one the keeper marked as the agent in its environment; without a keeper (before it), the
     * only one, the container's first process.
     */
    async agentPid(member) {
      const { container } = await containerOf(member);
      const mains = [container.pid, ...descendants(container.pid)].filter((p) => AGENT_SCRIPT.test(proc(p, 'cmdline')));
      const marked = mains.find((p) =>
        proc(p, 'environ')
          .split('\0')
          .some((v) => v.startsWith(AGENT_PROCESS_ENV)),
      );
      const pid = marked ?? (mains.length === 1 ? mains[0] : undefined);
      if (!pid) throw new Error(`${member.name}: no agent process under container PID ${container.pid}`);
      return pid;
    },
    /** The agent process alone is killed; what brings it back is Kanri's own (its keeper; before the keeper, the node restarting the container). */
    async killAgent(_member, pid) {
      process.kill(pid, 'SIGKILL');
    },
    /** The proxies between `member`'s node and the API server. */
    async memberProxies(member) {
      const { node } = await containerOf(member);
      if (!node.apiProxy) throw new Error('the nodes were started without apiProxy');
      return [node.apiProxy];
    },
    /** Every path to the API server: each node's, and the operator's. */
    async storeProxies() {
      const proxies = [...system.cp.processNodes.map((n) => n.apiProxy), system.env.operatorProxy];
      if (proxies.some((p) => !p)) throw new Error('the system was started without apiProxy and operatorProxy');
      return proxies;
    },
  };
}
