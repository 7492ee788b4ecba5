/**
 * One versioned entry of the Kanri cache (`<root>/<name>-<version>/bin`), filled at most once.
 *
 * Guarantees: a cross-process lock makes parallel test processes wait for one producer instead
 * of racing; files appear in `bin/` only once complete (produced in a scratch dir, then renamed),
 * and the `.complete` marker is written last, so a killed producer never leaves a half-written
 * entry that looks usable. Go builds (`ensureBinaries`) and the pgBackRest download share it.
 */
import { access, constants, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import lockfile from 'proper-lockfile';
import { errnoCode } from '../errno.js';
import { BinaryBuildError } from '../errors.js';
import type { ProgressListener } from './build-progress.js';

/** What one cache entry holds. */
export interface CacheEntry {
  /** Progress and error name, and the first half of the directory name. */
  readonly name: string;
  readonly version: string;
  /** The entry's directory, for example `~/.cache/kanri/etcd-v3.6.16`; files live in its `bin/`. */
  readonly dir: string;
  /** Executables the producer must write. */
  readonly binaries: readonly string[];
  /** Non-executable files the producer writes beside them. */
  readonly files?: readonly string[];
  /**
   * Directories the producer writes whole (a relocatable installation's `bin`, `lib` and `share`,
   * which find each other by relative path), moved into `dir` as they are. With `bin` among them,
   * `binaries` and `files` are checked inside it instead of moved there one by one.
   */
  readonly trees?: readonly string[];
}

/** Writes the entry's binaries and files into `scratch` (an empty directory); may report progress. */
export type Producer = (scratch: string, onProgress: ProgressListener) => Promise<void>;

const COMPLETE_MARKER = '.complete';

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** True when every one of `names` is an executable file in `dir`. */
export async function allExecutable(dir: string, names: readonly string[]): Promise<boolean> {
  const found = await Promise.all(names.map((n) => isExecutable(join(dir, n))));
  return found.every(Boolean);
}

export function entryBinDir(entry: CacheEntry): string {
  return join(entry.dir, 'bin');
}

/** An entry is cached once its marker exists (written last) and every file is still there. */
export async function isEntryCached(entry: CacheEntry): Promise<boolean> {
  const bin = entryBinDir(entry);
  try {
    await access(join(bin, COMPLETE_MARKER));
    await Promise.all((entry.files ?? []).map((f) => access(join(bin, f))));
    await Promise.all((entry.trees ?? []).map((t) => access(join(entry.dir, t))));
  } catch {
    return false;
  }
  return allExecutable(bin, entry.binaries);
}

/** Runs `produce` into the entry unless another process already did, holding the entry's lock throughout. */
export async function fillCacheEntry(
  entry: CacheEntry,
  produce: Producer,
  onProgress: ProgressListener,
): Promise<void> {
  const { dir } = entry;
  await mkdir(dir, { recursive: true });
  const waitStarted = Date.now();
  let release: (() => Promise<void>) | undefined;
  let compromised: Error | undefined;
  while (!release) {
    try {
      release = await lockfile.lock(dir, {
        realpath: false,
        lockfilePath: `${dir}.lock`,
        // The holder refreshes the lock every 5 s; one not refreshed for 60 s belongs to a dead process.
        stale: 60_000,
        update: 5_000,
        onCompromised: (error) => {
          compromised = error;
        },
      });
    } catch (error) {
      if (errnoCode(error) !== 'ELOCKED') throw error;
      onProgress({
        component: entry.name,
        version: entry.version,
        phase: 'waiting-for-lock',
        elapsedMs: Date.now() - waitStarted,
      });
      await sleep(1_000);
      if (await isEntryCached(entry)) return;
    }
  }
  try {
    if (await isEntryCached(entry)) return;
    const scratch = join(dir, `build-${process.pid}-${Date.now()}`);
    await mkdir(scratch, { recursive: true });
    try {
      await produce(scratch, onProgress);
      if (compromised) throw compromised;
      const bin = entryBinDir(entry);
      const produced = async (path: string, name: string) => {
        try {
          await access(path);
        } catch (error) {
          throw new BinaryBuildError(entry.name, `${entry.name}: the build finished but produced no ${name}`, '', {
            cause: error,
          });
        }
      };
      for (const tree of entry.trees ?? []) {
        await produced(join(scratch, tree), `${tree}/`);
        // A producer killed after moving some trees left them behind without the marker.
        await rm(join(dir, tree), { recursive: true, force: true });
        await rename(join(scratch, tree), join(dir, tree));
      }
      await mkdir(bin, { recursive: true });
      const flat = !(entry.trees ?? []).includes('bin');
      for (const name of [...entry.binaries, ...(entry.files ?? [])]) {
        await produced(flat ? join(scratch, name) : join(bin, name), name);
        if (flat) await rename(join(scratch, name), join(bin, name));
      }
      await writeFile(join(bin, COMPLETE_MARKER), `${entry.version}\n`);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  } finally {
    await release();
  }
}

/**
 * Fills `entry` with what `fetch` downloads into a scratch directory, unless it is cached,
 * reporting `fetching` and `fetched` (the downloads: PyPI wheels, Debian packages).
 */
export async function fetchOnce(
  entry: CacheEntry,
  version: string,
  fetch: (scratch: string) => Promise<void>,
  onProgress: ProgressListener,
): Promise<void> {
  if (await isEntryCached(entry)) return;
  await fillCacheEntry(
    entry,
    async (scratch, report) => {
      const started = Date.now();
      const phase = (phase: 'fetching' | 'fetched') =>
        report({ component: entry.name, version, phase, elapsedMs: Date.now() - started });
      phase('fetching');
      await fetch(scratch);
      phase('fetched');
    },
    onProgress,
  );
}
