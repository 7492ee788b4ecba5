/**
 * The loop devices attached on this machine and their backing files, read from sysfs
 * (`/sys/block/loopN/loop/backing_file`, as `losetup -j` does), so a sized volume's devices are
 * found by its image's path and nothing else.
 */
import { readdir, readFile } from 'node:fs/promises';
import { isWithin } from './mount-table.js';

export interface LoopDevice {
  /** `/dev/loopN`. */
  readonly device: string;
  readonly backingFile: string;
  /** The backing file was removed while attached (sysfs appends ` (deleted)`). */
  readonly deleted: boolean;
}

const DELETED = ' (deleted)';

/**
 * A loop device from its sysfs name and `backing_file` text. Pure.
 *
 * @example
 * ```ts
 * parseLoopDevice('loop3', '/tmp/v/pvc-1.img (deleted)\n');
 * // { device: '/dev/loop3', backingFile: '/tmp/v/pvc-1.img', deleted: true }
 * ```
 */
export function parseLoopDevice(name: string, backingFileText: string): LoopDevice {
  const text = backingFileText.replace(/\n$/, '');
  const deleted = text.endsWith(DELETED);
  return { device: `/dev/${name}`, backingFile: deleted ? text.slice(0, -DELETED.length) : text, deleted };
}

/** The devices whose backing file is `file`. Pure. */
export function loopsBackedBy(devices: readonly LoopDevice[], file: string): LoopDevice[] {
  return devices.filter((d) => d.backingFile === file);
}

/** The devices whose backing file is inside any of `dirs`. Pure. */
export function loopsBackedWithin(devices: readonly LoopDevice[], dirs: readonly string[]): LoopDevice[] {
  return devices.filter((d) => dirs.some((dir) => isWithin(d.backingFile, dir)));
}

/** Every attached loop device (an unattached one has no `backing_file`). Empty where there is no sysfs. */
export async function listLoopDevices(): Promise<LoopDevice[]> {
  const names = (await readdir('/sys/block').catch(() => [])).filter((n) => /^loop\d+$/.test(n));
  const devices: LoopDevice[] = [];
  for (const name of names) {
    const text = await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(() => undefined);
    if (text !== undefined) devices.push(parseLoopDevice(name, text));
  }
  return devices;
}
