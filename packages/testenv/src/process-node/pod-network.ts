/**
 * Pod addresses on loopback. Linux routes all of 127.0.0.0/8 to `lo`, so every Pod can own an
 * address (127.X.y.z) and bind its ports there without clashing with other Pods.
 *
 * Each set of process nodes leases one /16 block (127.X.0.0/16, X ≥ 1, so 127.0.0.1 and the
 * resolver's 127.0.0.53 are never handed out) through a lock file in the OS temp directory, so
 * that control planes running side by side, in this or other processes, never hand out the same
 * address. A lock left by a killed process goes stale after a minute and is taken over. Every user
 * of the machine shares the lock directory, so it is used only when it is sticky and root's or
 * this user's own (as /tmp is): then nobody removes or replaces another user's locks.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { errnoCode } from '../errno.js';
import { TestenvError } from '../errors.js';
import { ensureTrustedDirectory } from '../trusted-dir.js';

const LEASE_DIR = join(tmpdir(), 'kanri-pod-networks');

/** The addresses of one block, in allocation order: 127.X.0.1 … 127.X.255.254. Pure. */
export function blockAddress(block: number, index: number): string {
  const host = index + 1; // skip .0.0
  return `127.${block}.${Math.floor(host / 256)}.${host % 256}`;
}

/**
 * Leases a free loopback /16 block (127.X.0.0/16) through the lock files process nodes use, so
 * that anything else on the machine that serves on loopback addresses (a benchmark's own
 * PostgreSQL members, say) never clashes with a control plane's Pods. Release it when done.
 *
 * @example
 * ```ts
 * const { block, release } = await leaseLoopbackBlock();
 * // serve on 127.${block}.0.1 …
 * await release();
 * ```
 */
export async function leaseLoopbackBlock(
  options: { readonly leaseDir?: string } = {},
): Promise<{ block: number; release: () => Promise<void> }> {
  const leaseDir = options.leaseDir ?? LEASE_DIR;
  ensureTrustedDirectory(leaseDir, 0o1777, { shared: true });
  for (let block = 1; block <= 254; block++) {
    try {
      const release = await lockfile.lock(join(leaseDir, `127.${block}`), {
        realpath: false,
        // A lock is refreshed every 5 s and taken over only after 60 s without: on a loaded
        // machine a refresh can be late by seconds, and a lock taken over while its holder lives
        // hands the same Pod addresses to two control planes. With 254 blocks, a killed process's
        // lock costs nothing while it goes stale.
        stale: 60_000,
        update: 5_000,
        retries: 0,
        // A lock we lose (the file vanished, the clock jumped) must not crash the test process,
        // but addresses may now clash: say so, naming the block.
        onCompromised: (error: Error) =>
          process.stderr.write(
            `kanri testenv: lost the lease of loopback block 127.${block}.0.0/16: ${error.message}\n`,
          ),
      });
      return { block, release };
    } catch (error) {
      if (errnoCode(error) !== 'ELOCKED') throw error;
    }
  }
  throw new TestenvError('no free loopback address block: 254 are in use on this machine');
}

const BLOCK_SIZE = 256 * 256 - 2;

export class PodNetwork {
  readonly block: number;
  readonly #release: () => Promise<void>;
  readonly #byKey = new Map<string, string>();
  readonly #inUse = new Set<string>();
  #next = 0;

  private constructor(block: number, release: () => Promise<void>) {
    this.block = block;
    this.#release = release;
  }

  /** Leases a free /16 block. */
  static async acquire(): Promise<PodNetwork> {
    const { block, release } = await leaseLoopbackBlock();
    return new PodNetwork(block, release);
  }

  /** The CIDR this network hands addresses from, e.g. `127.3.0.0/16`. */
  get cidr(): string {
    return `127.${this.block}.0.0/16`;
  }

  /** True if `ip` belongs to this network's block. */
  contains(ip: string): boolean {
    return ip.startsWith(`127.${this.block}.`);
  }

  /**
   * The address of `key` (a Pod UID): the one it already has, `preferred` if it is ours and free
   * (a Pod adopted after a restart keeps its address), else the next unused one. Addresses are
   * handed out round-robin so a released one is not reused at once (old clients may still dial it).
   */
  allocate(key: string, preferred?: string): string {
    const existing = this.#byKey.get(key);
    if (existing) return existing;
    let ip: string | undefined;
    if (preferred && this.contains(preferred) && !this.#inUse.has(preferred)) ip = preferred;
    for (let tries = 0; ip === undefined && tries < BLOCK_SIZE; tries++) {
      const candidate = blockAddress(this.block, this.#next);
      this.#next = (this.#next + 1) % BLOCK_SIZE;
      if (!this.#inUse.has(candidate)) ip = candidate;
    }
    if (ip === undefined) throw new TestenvError(`pod network ${this.cidr} is full`);
    this.#byKey.set(key, ip);
    this.#inUse.add(ip);
    return ip;
  }

  release(key: string): void {
    const ip = this.#byKey.get(key);
    if (ip === undefined) return;
    this.#byKey.delete(key);
    this.#inUse.delete(ip);
  }

  async close(): Promise<void> {
    await this.#release().catch(() => {});
  }
}
