/**
 * One real node's isolation: a network and mount namespace held open by a holder process, a
 * veth into the host bridge, private mounts over the paths containerd and the kubelet hard-code,
 * and a cgroup root on every hierarchy that holds the node's daemons and, below them, its Pods.
 *
 * The namespaces live exactly as long as their processes, so no bind mount under /run/netns is
 * ever left behind; the mounts made inside vanish with the mount namespace. Powering a node off
 * freezes its cgroup (every daemon, shim and container at once) before killing it, as a power
 * loss would: nothing acknowledges anything after the freeze.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { TestenvError } from '../errors.js';
import { type ManagedProcess, startProcess } from '../managed-process.js';
import { ip } from './ip-command.js';
import { ipRouteArgs, type NetworkPlan, type NodeAddressing } from './network-plan.js';

const exec = promisify(execFile);
const CGROUP_MOUNT = '/sys/fs/cgroup';

/**
 * The kubelet sets these kernel tunables when they differ from what it wants. They are the
 * machine's, not the namespace's: the node sees these files instead, already holding the values
 * it wants, so the machine's own settings are never changed.
 */
const KERNEL_TUNABLES: Readonly<Record<string, string>> = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
};

/** The cgroup v1 hierarchies mounted here (`cpu`, `memory`, …), or `['']` on a unified (v2) machine. */
export async function cgroupHierarchies(): Promise<string[]> {
  const unified = await stat(join(CGROUP_MOUNT, 'cgroup.controllers')).then(
    () => true,
    () => false,
  );
  if (unified) return [''];
  const entries = await readdir(CGROUP_MOUNT, { withFileTypes: true });
  const found: string[] = [];
  for (const entry of entries) {
    // `unified` too (hybrid mode's cgroup2): runc mirrors the node's cgroups there, which must go with it.
    if (!entry.isDirectory()) continue;
    const procs = await stat(join(CGROUP_MOUNT, entry.name, 'cgroup.procs')).catch(() => undefined);
    if (procs) found.push(entry.name);
  }
  return found;
}

/** The freezer of a v1 machine, or the unified hierarchy's own `cgroup.freeze`. */
function freezerDir(hierarchies: readonly string[], cgroup: string): string {
  return join(CGROUP_MOUNT, hierarchies.includes('freezer') ? 'freezer' : '', cgroup);
}

/** Creates `/<root>` and `/<root>/system` on every hierarchy; a new cpuset holds no CPU until given its parent's. */
export async function createCgroupRoot(root: string, hierarchies: readonly string[]): Promise<void> {
  for (const hierarchy of hierarchies) {
    for (const dir of [join(CGROUP_MOUNT, hierarchy, root), join(CGROUP_MOUNT, hierarchy, root, 'system')]) {
      await mkdir(dir, { recursive: true });
      if (hierarchy === 'cpuset') {
        for (const file of ['cpuset.cpus', 'cpuset.mems']) {
          const parent = await readFile(join(dir, '..', file), 'utf8');
          await writeFile(join(dir, file), parent.trim() || '0');
        }
      }
    }
  }
}

/** Every PID in `dir`'s cgroup and below. */
async function cgroupPids(dir: string): Promise<number[]> {
  const pids = (await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map(Number);
  const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const child of children) if (child.isDirectory()) pids.push(...(await cgroupPids(join(dir, child.name))));
  return pids;
}

/**
 * The PIDs of one container: the kubelet (cgroupfs driver) names its cgroup after the container
 * ID, somewhere below the node's root (`kubepods/<qos>/pod<uid>/<id>`). Empty when not found.
 */
export async function containerPids(
  root: string,
  hierarchies: readonly string[],
  containerId: string,
): Promise<number[]> {
  const find = async (dir: string): Promise<string | undefined> => {
    const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const child of children) {
      if (!child.isDirectory()) continue;
      if (child.name === containerId) return join(dir, child.name);
      const found = await find(join(dir, child.name));
      if (found) return found;
    }
    return undefined;
  };
  const dir = await find(freezerDir(hierarchies, root));
  return dir ? cgroupPids(dir) : [];
}

async function setFrozen(hierarchies: readonly string[], root: string, frozen: boolean): Promise<void> {
  const dir = freezerDir(hierarchies, root);
  const v1 = hierarchies.includes('freezer');
  const file = join(dir, v1 ? 'freezer.state' : 'cgroup.freeze');
  await writeFile(file, v1 ? (frozen ? 'FROZEN' : 'THAWED') : frozen ? '1' : '0').catch(() => {});
}

/**
 * Power loss: freezes everything in the node's cgroup at once, SIGKILLs each process, thaws so the
 * kills land, and waits until the cgroup is empty. Returns how many processes it killed.
 */
export async function killCgroup(root: string, hierarchies: readonly string[]): Promise<number> {
  const dir = freezerDir(hierarchies, root);
  await setFrozen(hierarchies, root, true);
  let killed = 0;
  for (let round = 0; round < 100; round++) {
    const pids = await cgroupPids(dir);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // exited meanwhile
      }
    }
    await setFrozen(hierarchies, root, false);
    await sleep(20);
  }
  return killed;
}

/** Removes the node's cgroups on every hierarchy, deepest first (a cgroup with children cannot go). */
export async function removeCgroupRoot(root: string, hierarchies: readonly string[]): Promise<void> {
  const removeTree = async (dir: string): Promise<void> => {
    const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const child of children) if (child.isDirectory()) await removeTree(join(dir, child.name));
    await rmdir(dir).catch(() => {});
  };
  for (const hierarchy of hierarchies) await removeTree(join(CGROUP_MOUNT, hierarchy, root));
}

/**
 * `command args` run in the node's namespaces and its `system` cgroup: the shell moves itself into
 * the cgroup before it becomes the command, so not even the command's first child escapes it.
 */
export function inNode(
  holderPid: number,
  cgroupProcsFiles: readonly string[],
  command: string,
  args: readonly string[],
): { command: string; args: string[] } {
  const join = cgroupProcsFiles.map((file) => `echo $$ > ${file}`).join(' && ');
  return {
    command: 'sh',
    args: ['-c', `${join} && exec "$@"`, 'sh', 'nsenter', '-t', String(holderPid), '-n', '-m', '--', command, ...args],
  };
}

export interface NodeNamespace {
  readonly holder: ManagedProcess;
  /** `cgroup.procs` of the node's `system` cgroup on every hierarchy. */
  readonly systemProcs: readonly string[];
}

/**
 * Starts the holder (in the node's `system` cgroup), wires its veth into the bridge with the
 * node's address and routes, turns on forwarding, and makes the private mounts under `dir`.
 */
export async function createNodeNamespace(
  network: NetworkPlan,
  node: NodeAddressing,
  cgroupRoot: string,
  hierarchies: readonly string[],
  dir: string,
  logFile: string,
): Promise<NodeNamespace> {
  const systemProcs = hierarchies.map((h) => join(CGROUP_MOUNT, h, cgroupRoot, 'system', 'cgroup.procs'));
  const holder = startProcess({
    name: `${node.name} namespaces`,
    command: 'sh',
    args: [
      '-c',
      `${systemProcs.map((file) => `echo $$ > ${file}`).join(' && ')} && exec unshare --net --mount --propagation private sleep infinity`,
    ],
    logFile,
  });
  const netns = `/proc/${holder.pid}/ns/net`;
  for (let i = 0; ; i++) {
    const inOwn = await exec('readlink', [netns]).then(
      async (r) => r.stdout.trim() !== (await exec('readlink', ['/proc/self/ns/net'])).stdout.trim(),
      () => false,
    );
    if (inOwn) break;
    if (!holder.running || i > 200)
      throw new TestenvError(`${node.name}: its namespaces were not created (see ${logFile})`);
    await sleep(10);
  }
  // A power loss leaves the node's old veth to go with its old network namespace, which the kernel
  // tears down in the background: under load it still held the name when the node was powered on
  // again (CI, 2026-12-04: "RTNETLINK answers: File exists"). It is this node's name, so whatever
  // is left of it goes; deleting either end removes the pair.
  await ip(['link', 'del', node.hostInterface]).catch(() => undefined);
  await ip(['link', 'add', node.hostInterface, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
  await ip(['link', 'set', node.hostInterface, 'master', network.bridge, 'up']);
  const pid = holder.pid;
  await ip(['addr', 'add', `${node.address}/${network.prefixLength}`, 'dev', 'eth0'], pid);
  await ip(['link', 'set', 'lo', 'up'], pid);
  await ip(['link', 'set', 'eth0', 'up'], pid);
  for (const route of node.routes) await ip(ipRouteArgs('add', route), pid);
  const tunables = join(dir, 'kernel-tunables');
  await mkdir(tunables, { recursive: true });
  for (const dirName of ['var-lib', 'var-log']) await mkdir(join(dir, dirName), { recursive: true });
  const script = [
    'set -e',
    'sysctl -qw net.ipv4.ip_forward=1',
    // Bridged Pod traffic must pass kube-proxy's rules (per namespace on this kernel).
    'sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true',
    // containerd 1.6 hard-codes /run/containerd/{runc,s,fifo}, and the CNI plugins /var/lib/cni.
    'mount -t tmpfs -o mode=755 kanri-run /run',
    `mount --bind ${join(dir, 'var-lib')} /var/lib`,
    `mount --bind ${join(dir, 'var-log')} /var/log`,
    ...Object.entries(KERNEL_TUNABLES).map(([key, value]) => {
      const file = join(tunables, key.replaceAll('/', '.'));
      return `echo ${value} > ${file} && mount --bind ${file} /proc/sys/${key}`;
    }),
  ].join('\n');
  await exec('nsenter', ['-t', String(pid), '-n', '-m', '--', 'sh', '-c', script]).catch((error) => {
    throw new TestenvError(`${node.name}: setting up its namespaces failed: ${String(error.stderr ?? error)}`, {
      cause: error,
    });
  });
  return { holder, systemProcs };
}
