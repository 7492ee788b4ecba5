/**
 * Running the sized volumes' programs: by absolute path, with an argument array, in this mount
 * namespace or a real node's (`nsenter`), and unmounting by path.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readMounts, topMountAt } from './mount-table.js';
import { requireTool, type SizedVolumeTool } from './sized-support.js';

const exec = promisify(execFile);

/**
 * Runs a tool by absolute path with an argument array, in the mount namespace of `pid` when given;
 * a failure's message is the tool's own stderr.
 */
export async function runTool(tool: SizedVolumeTool, args: readonly string[], pid?: number): Promise<string> {
  const path = await requireTool(tool);
  const [command, argv] =
    pid === undefined
      ? [path, [...args]]
      : [await requireTool('nsenter'), ['-t', String(pid), '-m', '--', path, ...args]];
  try {
    return (await exec(command, argv, { timeout: 120_000 })).stdout;
  } catch (error) {
    throw toolError(tool, args, error, pid);
  }
}

/** The error of a failed tool: one line, for the log and the claim's condition. */
export function toolError(tool: string, args: readonly string[], error: unknown, pid?: number): Error {
  const stderr = String((error as { stderr?: unknown }).stderr ?? '')
    .split('\n')
    .map((line) => line.trim())
    // e2fsprogs' banner (`resize2fs 1.47.0 (5-Feb-2023)`) says nothing about the failure.
    .filter((line) => line !== '' && !/^\S+ \d+\.\d+(\.\d+)? \([^)]*\)$/.test(line))
    .join('; ');
  const why = stderr || (error instanceof Error ? error.message : String(error));
  const where = pid === undefined ? '' : ` (in the mount namespace of ${pid})`;
  return new Error(`${tool} ${args.join(' ')}${where}: ${why}`, { cause: error });
}

/** Unmounts `path`, lazily if it is busy (the filesystem then goes with its last user). */
export async function unmount(path: string, pid?: number): Promise<void> {
  await runTool('umount', [path], pid).catch(() => runTool('umount', ['--lazy', path], pid));
}

/** Unmounts every mount stacked on `path` in this mount namespace, or `pid`'s. */
export async function unmountAll(path: string, pid?: number): Promise<void> {
  const read = () => readMounts(pid ?? 'self');
  for (let round = 0; round < 10 && topMountAt(await read(), path); round++) await unmount(path, pid);
  if (topMountAt(await read(), path)) throw new Error(`${path} is still mounted after 10 unmounts`);
}
