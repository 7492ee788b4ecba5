/**
 * One real node: containerd, the kubelet, kube-proxy and the NetworkPolicy enforcer in the node's
 * own namespaces and cgroup (node-namespace.ts), with the images testenv built imported into
 * containerd before the kubelet registers the Node, since no registry can be pulled from.
 */
import { execFile } from 'node:child_process';
import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CLUSTER_DOMAIN } from '../dns/cluster-dns-plan.js';
import { ComponentStartError } from '../errors.js';
import { type ManagedProcess, startProcess } from '../managed-process.js';
import { ip } from './ip-command.js';
import type { NetworkPlan, NodeAddressing } from './network-plan.js';
import { enforcerArgs } from './network-policy-enforcer.js';
import { cniConfig, containerdConfig, kubeletConfig, kubeProxyConfig } from './node-config.js';
import {
  containerPids,
  createNodeNamespace,
  inNode,
  killCgroup,
  type NodeNamespace,
  removeCgroupRoot,
} from './node-namespace.js';

const exec = promisify(execFile);

/** Where the node's programs are, and the environment they need (PATH for runc and iptables, the unpacked libraries). */
export interface NodePrograms {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly containerd: string;
  readonly ctr: string;
  readonly runc: string;
  readonly cniBinDir: string;
  /** The NetworkPolicy enforcer (`kube-router-netpol`); without it no NetworkPolicy is enforced. */
  readonly networkPolicy?: string;
  readonly env: Readonly<Record<string, string>>;
}

export interface RealNodeInput {
  readonly network: NetworkPlan;
  readonly node: NodeAddressing;
  /** The node's private directory. */
  readonly dir: string;
  readonly logsDir: string;
  readonly cgroupRoot: string;
  readonly hierarchies: readonly string[];
  readonly tools: NodePrograms;
  /** OCI archives to import before the kubelet starts (the sandbox image among them). */
  readonly imageArchives: readonly string[];
  readonly kubeletKubeconfig: string;
  readonly kubeProxyKubeconfig: string;
  /** The NetworkPolicy enforcer's kubeconfig, when `tools.networkPolicy` runs. */
  readonly networkPolicyKubeconfig?: string;
  readonly clientCaFile: string;
  readonly proxyMode: 'iptables' | 'nftables';
}

async function waitFor(what: string, process: ManagedProcess, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (!process.running) throw new ComponentStartError(process.name, `exited before ${what}`, await process.logTail());
    if (Date.now() > deadline) {
      throw new ComponentStartError(process.name, `${what} not within ${timeoutMs} ms`, await process.logTail());
    }
    await sleep(50);
  }
}

/**
 * A started real node. `powerOff()` is a power loss and `powerOn()` the reboot after it; `stop()`
 * ends it for good and removes its traces.
 */
export class RealNode {
  readonly name: string;
  readonly address: string;
  readonly podCidr: string;
  #namespace: NodeNamespace | undefined;
  #daemons: ManagedProcess[] = [];
  #kubeletArgs: readonly string[] = [];
  #stopped = false;

  constructor(readonly input: RealNodeInput) {
    this.name = input.node.name;
    this.address = input.node.address;
    this.podCidr = input.node.podCidr;
  }

  /** The holder's PID: `nsenter -t <pid> -n` runs a command in the node's network namespace. */
  get namespacePid(): number | undefined {
    return this.#namespace?.holder.running ? this.#namespace.holder.pid : undefined;
  }

  /**
   * Where the kubelet writes its containers' output: `<namespace>_<pod>_<uid>/<container>/<n>.log`
   * in the CRI format, one file per start. It is the node's `/var/log/pods`, on the machine's disk
   * (node-namespace.ts mounts `var-log` there), so it survives a `powerOff()`.
   */
  get podLogsDir(): string {
    return join(this.input.dir, 'var-log', 'pods');
  }

  /** The daemons' PIDs and log files, in start order. */
  get processes(): readonly { name: string; pid: number; logFile: string }[] {
    return this.#daemons.map((d) => ({ name: d.name, pid: d.pid, logFile: d.logFile }));
  }

  async start(): Promise<void> {
    const { dir, node, tools } = this.input;
    const socket = join(dir, 'containerd.sock');
    const cniConfDir = join(dir, 'cni');
    await mkdir(cniConfDir, { recursive: true });
    await Promise.all([
      writeFile(
        join(dir, 'containerd.toml'),
        containerdConfig({ dir, socket, runc: tools.runc, cniBinDir: tools.cniBinDir, cniConfDir }),
      ),
      writeFile(
        join(cniConfDir, '10-kanri.conflist'),
        cniConfig({ podCidr: node.podCidr, ipamDir: join(dir, 'ipam') }),
      ),
      writeFile(join(dir, 'resolv.conf'), ''),
      writeFile(
        join(dir, 'kubelet.yaml'),
        kubeletConfig({
          socket,
          address: node.address,
          cgroupRoot: `/${this.input.cgroupRoot}`,
          clientCaFile: this.input.clientCaFile,
          resolvConf: join(dir, 'resolv.conf'),
          clusterDns: this.input.network.clusterDnsIp,
          clusterDomain: CLUSTER_DOMAIN,
        }),
      ),
      writeFile(
        join(dir, 'kube-proxy.yaml'),
        kubeProxyConfig({
          kubeconfig: this.input.kubeProxyKubeconfig,
          nodeName: node.name,
          address: node.address,
          clusterCidr: this.input.network.clusterCidr,
          mode: this.input.proxyMode,
        }),
      ),
    ]);
    this.#namespace = await createNodeNamespace(
      this.input.network,
      node,
      this.input.cgroupRoot,
      this.input.hierarchies,
      dir,
      this.#log('namespaces'),
    );
    // A killed containerd leaves its socket file behind, which would pass for the new one's.
    await rm(socket, { force: true });
    const containerd = this.#daemon('containerd', tools.containerd, ['--config', join(dir, 'containerd.toml')]);
    await waitFor('its socket answered', containerd, () =>
      access(socket).then(
        () => true,
        () => false,
      ),
    );
    for (const archive of this.input.imageArchives) {
      await exec(tools.ctr, ['--address', socket, '-n', 'k8s.io', 'images', 'import', archive], {
        env: { ...process.env, ...tools.env },
      }).catch(async (error) => {
        throw new ComponentStartError(
          containerd.name,
          `importing ${archive} failed: ${String(error.stderr ?? error).trim()}`,
          await containerd.logTail(),
        );
      });
    }
    this.#kubeletArgs = [
      `--config=${join(dir, 'kubelet.yaml')}`,
      `--kubeconfig=${this.input.kubeletKubeconfig}`,
      `--hostname-override=${node.name}`,
      `--node-ip=${node.address}`,
      `--root-dir=${join(dir, 'kubelet')}`,
      '--node-labels=kanri.dev/real-node=true',
    ];
    this.#daemon('kubelet', tools.kubelet, this.#kubeletArgs);
    this.#daemon('kube-proxy', tools.kubeProxy, [`--config=${join(dir, 'kube-proxy.yaml')}`]);
    if (tools.networkPolicy && this.input.networkPolicyKubeconfig) {
      this.#daemon(
        'network-policy',
        tools.networkPolicy,
        enforcerArgs({
          kubeconfig: this.input.networkPolicyKubeconfig,
          nodeName: node.name,
          serviceCidr: this.input.network.serviceCidr,
        }),
      );
    }
  }

  #log(name: string): string {
    return join(this.input.logsDir, `${this.name}-${name}.log`);
  }

  #daemon(name: string, command: string, args: readonly string[]): ManagedProcess {
    const namespace = this.#namespace;
    if (!namespace) throw new Error(`${this.name}: its namespaces are not created`);
    const wrapped = inNode(namespace.holder.pid, namespace.systemProcs, command, args);
    const daemon = startProcess({
      name: `${this.name} ${name}`,
      command: wrapped.command,
      args: wrapped.args,
      logFile: this.#log(name),
      env: { ...process.env, ...this.input.tools.env },
    });
    const previous = this.#daemons.findIndex((d) => d.name === daemon.name);
    if (previous === -1) this.#daemons.push(daemon);
    else this.#daemons[previous] = daemon;
    return daemon;
  }

  /**
   * Stops the kubelet (SIGTERM, as a service manager would). The containers run on, but nobody
   * reports for the node: its Lease goes stale and the node controller marks it NotReady.
   */
  async stopKubelet(): Promise<void> {
    await this.kubelet?.stop();
  }

  /** Starts a stopped kubelet again; it finds its containers running and adopts them. */
  startKubelet(): void {
    if (this.kubelet?.running) throw new Error(`${this.name}: its kubelet still runs (PID ${this.kubelet.pid})`);
    this.#daemon('kubelet', this.input.tools.kubelet, this.#kubeletArgs);
  }

  /**
   * Cuts the node's only link (its veth, from the host's side): nothing reaches it and nothing
   * leaves it, while every process on it runs on, as when a switch port dies.
   */
  async disconnect(): Promise<void> {
    await ip(['link', 'set', this.input.node.hostInterface, 'down']);
  }

  async reconnect(): Promise<void> {
    await ip(['link', 'set', this.input.node.hostInterface, 'up']);
  }

  /**
   * Kills every process of one container (`containerID` from the Pod's status, with or without
   * `containerd://`), as a crash or the OOM killer would; the kubelet restarts it as the Pod's
   * `restartPolicy` says. Returns the PIDs it signalled; throws when the container is not on this node.
   */
  async killContainer(containerId: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<number[]> {
    const pids = await this.containerPids(containerId);
    if (pids.length === 0) throw new Error(`${this.name}: no running container ${containerId}`);
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // exited meanwhile
      }
    }
    return pids;
  }

  /**
   * The PIDs (in the machine's PID namespace) of every process of one container (`containerID`
   * from the Pod's status, with or without `containerd://`): to find one process in it, such as a
   * postmaster, or to read its memory from /proc. Empty when the container is not on this node.
   */
  async containerPids(containerId: string): Promise<number[]> {
    return containerPids(this.input.cgroupRoot, this.input.hierarchies, containerId.replace(/^containerd:\/\//, ''));
  }

  /** The kubelet's process, to fail on its exit while waiting for the Node. */
  get kubelet(): ManagedProcess | undefined {
    return this.#daemons.find((d) => d.name.endsWith(' kubelet'));
  }

  /**
   * Power loss: every process of the node (daemons, shims, containers) is frozen at once, then
   * killed. Nothing is written to the API. The namespaces go with the holder.
   */
  async powerOff(): Promise<number> {
    const killed = await killCgroup(this.input.cgroupRoot, this.input.hierarchies);
    await Promise.all([...this.#daemons, ...(this.#namespace ? [this.#namespace.holder] : [])].map((p) => p.exited));
    return killed;
  }

  /**
   * Powers a node on again after `powerOff()`, as a reboot: new namespaces and link, an empty
   * `/run`, while its disk (`/var/lib`, containerd's images and state, the kubelet's directory)
   * is as the power loss left it. containerd, the kubelet and kube-proxy start again; the kubelet
   * finds the Pods still bound to the node and starts them in new sandboxes, with new Pod IPs.
   */
  async powerOn(): Promise<void> {
    if (this.#stopped) throw new Error(`${this.name}: stopped for good; it cannot be powered on`);
    if (this.namespacePid !== undefined) throw new Error(`${this.name} is powered on`);
    await this.start();
  }

  /** Powers the node off and removes its cgroups; its veth went with its network namespace. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.powerOff();
    await removeCgroupRoot(this.input.cgroupRoot, this.input.hierarchies);
  }
}
