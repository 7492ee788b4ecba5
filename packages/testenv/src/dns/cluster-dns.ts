/**
 * Starts the cluster DNS of real nodes (planned in cluster-dns-plan.ts): creates its RBAC, the
 * kube-dns Service and its EndpointSlice, and runs CoreDNS on the host until it has read the API.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ComponentStartError } from '../errors.js';
import { type ManagedProcess, startProcess } from '../managed-process.js';
import type { Api } from '../process-node/api.js';
import { type ClusterDnsInput, clusterDnsObjects, corefile, READY_PORT } from './cluster-dns-plan.js';

export interface ClusterDnsOptions extends ClusterDnsInput {
  /** The `coredns` binary (`ensureCoreDns`). */
  readonly binary: string;
  /** A kubeconfig of COREDNS_USER. */
  readonly kubeconfig: string;
  /** Where the Corefile is written. */
  readonly dir: string;
  readonly logsDir: string;
  readonly api: Api;
  readonly timeoutMs: number;
}

export interface ClusterDns {
  readonly process: ManagedProcess;
  stop(): Promise<void>;
}

async function answersReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * Resolves once CoreDNS answers ready, which its kubernetes plugin only says once it has listed
 * Services, EndpointSlices and Namespaces: a Pod started after this finds every Service. Stop the
 * returned process after the nodes, whose Pods query it.
 *
 * @example
 * ```ts
 * const dns = await startClusterDns({ binary, kubeconfig, hostAddress, clusterDnsIp, dir, logsDir, api, timeoutMs });
 * // … nodes with clusterDNS = clusterDnsIp …
 * await dns.stop();
 * ```
 */
export async function startClusterDns(options: ClusterDnsOptions): Promise<ClusterDns> {
  for (const { path, body } of clusterDnsObjects(options)) await options.api.create(path, body);
  const conf = join(options.dir, 'Corefile');
  await writeFile(conf, corefile(options, options.kubeconfig));
  const coredns = startProcess({
    name: 'coredns',
    command: options.binary,
    args: ['-conf', conf],
    logFile: join(options.logsDir, 'coredns.log'),
    cwd: options.dir,
  });
  const url = `http://${options.hostAddress}:${READY_PORT}/ready`;
  const deadline = Date.now() + options.timeoutMs;
  try {
    while (!(await answersReady(url))) {
      if (!coredns.running)
        throw new ComponentStartError('coredns', 'exited before it was ready', await coredns.logTail());
      if (Date.now() > deadline)
        throw new ComponentStartError('coredns', `not ready within ${options.timeoutMs} ms`, await coredns.logTail());
      await sleep(100);
    }
  } catch (error) {
    await coredns.stop();
    throw error;
  }
  return { process: coredns, stop: async () => void (await coredns.stop()) };
}
