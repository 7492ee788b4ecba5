/**
 * The host's side of a real-node network: claims a free slot by creating its bridge (creation
 * fails when another control plane holds it, so two never share one), installs the slot's
 * blackhole before anything else, and removes every route and the bridge again.
 *
 * A slot whose owner process died without cleaning up (a SIGKILLed test) is reclaimed: its owner
 * file names a PID that no longer runs.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import lockfile from 'proper-lockfile';
import { errnoCode } from '../errno.js';
import { TestenvError } from '../errors.js';
import { isProcessAlive } from '../managed-process.js';
import { ip } from './ip-command.js';
import { bridgeName, conflictingRoutes, ipRouteArgs, type NetworkPlan, SLOT_COUNT } from './network-plan.js';
import { cgroupHierarchies, killCgroup, removeCgroupRoot } from './node-namespace.js';

/** Owner files: under /run, so that a reboot (which removes every bridge) forgets them too. */
const OWNERS_DIR = '/run/kanri-testenv';

function ownerFile(slot: number): string {
  return join(OWNERS_DIR, `slot-${slot}.pid`);
}

async function ownerAlive(slot: number): Promise<boolean> {
  const pid = Number((await readFile(ownerFile(slot), 'utf8').catch(() => '')).trim());
  return Number.isInteger(pid) && pid > 0 && isProcessAlive(pid);
}

/** The cgroup roots of a slot's nodes (`kanri-s<slot>-<node>`), as the freezer (or unified) hierarchy lists them. */
export function slotCgroupPrefix(slot: number): string {
  return `kanri-s${slot}-`;
}

/**
 * Removes what a dead owner left: its nodes' processes (shims and containers outlive a SIGKILLed
 * testenv: they daemonise), their cgroups, the routes and the bridge (which takes its veths and
 * connected routes with it).
 */
async function reclaim(slot: number, plan: (slot: number) => NetworkPlan): Promise<void> {
  const hierarchies = await cgroupHierarchies();
  const listed = hierarchies.includes('freezer') ? 'freezer' : (hierarchies[0] ?? '');
  const roots = (await readdir(join('/sys/fs/cgroup', listed)).catch(() => [] as string[])).filter((name) =>
    name.startsWith(slotCgroupPrefix(slot)),
  );
  for (const root of roots) {
    await killCgroup(root, hierarchies);
    await removeCgroupRoot(root, hierarchies);
  }
  for (const route of [...plan(slot).hostRoutes].reverse()) await ip(ipRouteArgs('del', route)).catch(() => {});
  await ip(['link', 'del', bridgeName(slot)]).catch(() => {});
}

/**
 * Reclaims every slot whose owner died (a SIGKILLed test run): its containers outlive it, and
 * would otherwise run until a later run happens to take the same slot.
 */
async function reclaimStaleSlots(plan: (slot: number) => NetworkPlan): Promise<void> {
  const bridges = (await ip(['-o', 'link', 'show', 'type', 'bridge'])).split('\n');
  const owned = new Set((await readdir(OWNERS_DIR).catch(() => [] as string[])).map((f) => f.replace(/\.pid$/, '')));
  for (let slot = 0; slot < SLOT_COUNT; slot++) {
    const hasBridge = bridges.some((line) => line.split(':')[1]?.trim() === bridgeName(slot));
    if (!hasBridge && !owned.has(`slot-${slot}`)) continue;
    if (await ownerAlive(slot)) continue;
    await reclaim(slot, plan);
    await rm(ownerFile(slot), { force: true });
  }
}

/**
 * Takes the first free slot, creates its bridge with the host address, and adds the host routes
 * (blackhole first). `plan(slot)` gives the slot's addressing. Throws, naming the conflicting
 * routes, when the machine's own networks overlap every slot.
 */
export async function claimHostNetwork(plan: (slot: number) => NetworkPlan): Promise<NetworkPlan> {
  await mkdir(OWNERS_DIR, { recursive: true });
  // One claim at a time on the machine: between creating its bridge and writing its owner file, a
  // slot would look abandoned to another run's sweep. A lock left by a killed run is stale after 10 s.
  let release: (() => Promise<void>) | undefined;
  for (let attempt = 0; !release; attempt++) {
    try {
      release = await lockfile.lock(OWNERS_DIR, {
        realpath: false,
        lockfilePath: join(OWNERS_DIR, 'claim.lock'),
        stale: 10_000,
      });
    } catch (error) {
      if (errnoCode(error) !== 'ELOCKED' || attempt > 600) throw error;
      await sleep(100);
    }
  }
  try {
    return await claimLocked(plan);
  } finally {
    await release();
  }
}

async function claimLocked(plan: (slot: number) => NetworkPlan): Promise<NetworkPlan> {
  await reclaimStaleSlots(plan);
  const routeLines = (await ip(['route', 'show'])).split('\n').filter(Boolean);
  let lastConflict: string[] = [];
  for (let slot = 0; slot < SLOT_COUNT; slot++) {
    const candidate = plan(slot);
    try {
      await ip(['link', 'add', candidate.bridge, 'type', 'bridge']);
    } catch {
      if (await ownerAlive(slot)) continue;
      await reclaim(slot, plan);
      try {
        await ip(['link', 'add', candidate.bridge, 'type', 'bridge']);
      } catch {
        continue; // another process reclaimed it first
      }
    }
    await writeFile(ownerFile(slot), `${process.pid}\n`);
    // Routes are read once before the loop: a slot's own leftover routes were just reclaimed.
    const conflicts = conflictingRoutes(candidate, routeLines).filter((line) => !line.includes(candidate.bridge));
    if (conflicts.length > 0) {
      lastConflict = conflicts;
      await releaseHostNetwork(candidate);
      continue;
    }
    try {
      await ip(['addr', 'add', `${candidate.hostAddress}/${candidate.prefixLength}`, 'dev', candidate.bridge]);
      await ip(['link', 'set', candidate.bridge, 'up']);
      const [blackhole] = candidate.hostRoutes;
      if (blackhole) await ip(ipRouteArgs('add', blackhole));
      return candidate;
    } catch (error) {
      await releaseHostNetwork(candidate);
      throw error;
    }
  }
  throw new TestenvError(
    `real nodes: no free network slot of ${SLOT_COUNT}` +
      (lastConflict.length ? `; the machine's routes overlap them: ${lastConflict.join('; ')}` : ''),
  );
}

/** Adds the routes to each node (after their veths exist: a `via` route needs a reachable gateway). */
export async function addNodeRoutes(network: NetworkPlan): Promise<void> {
  for (const route of network.hostRoutes.slice(1)) await ip(ipRouteArgs('add', route));
}

/** Removes the slot's routes, its bridge and its owner file; safe to call twice. */
export async function releaseHostNetwork(network: NetworkPlan): Promise<void> {
  for (const route of [...network.hostRoutes].reverse()) await ip(ipRouteArgs('del', route)).catch(() => {});
  await ip(['link', 'del', network.bridge]).catch(() => {});
  await rm(ownerFile(network.slot), { force: true });
}
