/**
 * The data volume's fullness (plan/disk-full-plan.ts) as of now: postgres's last "No space left
 * on device" line, which the agent hands in as postgres logs it, and statfs of the volume. A
 * change is logged and recorded as an Event once; the status reporter puts the current answer in
 * the instance's report, from which the operator sets the cluster's DiskFull condition.
 */
import { statfs } from 'node:fs/promises';
import type { DataVolumeReport } from '../../contract/index.js';
import type { Logger } from '../log/logger.js';
import { planDiskFull } from '../plan/disk-full-plan.js';

const NO_SPACE = /No space left on device/;

export interface DiskWatchOptions {
  /** The data volume's mount (PGDATA is below it, and may not exist while cloning). */
  readonly path: string;
  readonly log: Logger;
  /** Told when the volume becomes full (with why) or has room again (undefined). */
  readonly onChange?: (full: string | undefined) => void;
}

/**
 * @example
 * ```ts
 * const disk = new DiskWatch({ path: config.dataDir, log, onChange: (full) => events.record(...) });
 * postgresLines.on((line) => disk.seeLine(line));
 * const full = await disk.check(); // 'the data volume is full: …' or undefined
 * ```
 */
export class DiskWatch {
  readonly #options: DiskWatchOptions;
  #lastNoSpace: { line: string; atMs: number } | undefined;
  #last: string | undefined;
  #volume: DataVolumeReport | undefined;

  constructor(options: DiskWatchOptions) {
    this.#options = options;
  }

  /** A line postgres logged. */
  seeLine(line: string): void {
    if (NO_SPACE.test(line)) this.#lastNoSpace = { line, atMs: performance.now() };
  }

  /** The volume's size and free space as the last {@link check} read them (undefined: unreadable). */
  get volume(): DataVolumeReport | undefined {
    return this.#volume;
  }

  /** Why the volume is full now, or undefined. */
  async check(): Promise<string | undefined> {
    let freeBytes: number | undefined;
    let totalBytes: number | undefined;
    try {
      const fs = await statfs(this.#options.path);
      freeBytes = fs.bavail * fs.bsize;
      totalBytes = fs.blocks * fs.bsize;
    } catch {
      // Not mounted yet, or gone: postgres's own complaints still count.
    }
    this.#volume =
      freeBytes !== undefined && totalBytes !== undefined
        ? { sizeBytes: totalBytes, availableBytes: freeBytes }
        : undefined;
    const last = this.#lastNoSpace;
    const full = planDiskFull({
      freeBytes,
      totalBytes,
      ...(last ? { lastNoSpace: { line: last.line, agoMs: performance.now() - last.atMs } } : {}),
    });
    if ((full === undefined) !== (this.#last === undefined)) {
      if (full) this.#options.log.error({ freeBytes, totalBytes }, full);
      else this.#options.log.info({ freeBytes, totalBytes }, 'the data volume has room again');
      this.#options.onChange?.(full);
    }
    this.#last = full;
    return full;
  }
}
