/**
 * What a real node's containers printed, read back from the kubelet's log files: the counterpart of
 * a process node's per-container log file, so that a test can read an agent's output on either
 * kind of node.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { RealNode } from './real-node.js';

/** `<time> <stream> <P|F> <text>`: the kubelet's CRI log line; P is a fragment the next line continues. */
const CRI_LINE = /^\S+ (?:stdout|stderr) ([PF]) (.*)$/;

/**
 * The lines a container printed, from the text of a CRI log file: prefixes removed, fragments of a
 * long line joined. A line not in the format is kept as it is. Pure.
 *
 * @example
 * ```ts
 * criLogLines('2026-12-04T02:00:00.1Z stdout P {"a":\n2026-12-04T02:00:00.1Z stdout F 1}\n');
 * // ['{"a":1}']
 * ```
 */
export function criLogLines(text: string): string[] {
  const lines: string[] = [];
  let partial = '';
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    const match = CRI_LINE.exec(raw);
    if (!match) {
      lines.push(raw);
      continue;
    }
    partial += match[2];
    if (match[1] === 'F') {
      lines.push(partial);
      partial = '';
    }
  }
  if (partial) lines.push(partial);
  return lines;
}

/**
 * Every line `container` of `namespace/pod` printed on `node`, over all its starts (a reboot, a
 * restart) and all Pods of that name, oldest first. Empty when it never ran there.
 *
 * @example
 * ```ts
 * const node = cp.realNodes[0];
 * const lines = await containerOutput(node, 'default', 'hippo-i-0', 'postgres');
 * ```
 */
export async function containerOutput(
  node: RealNode,
  namespace: string,
  pod: string,
  container: string,
): Promise<string[]> {
  const root = node.podLogsDir;
  const podDirs = (await readdir(root).catch(() => [] as string[])).filter((d) => d.startsWith(`${namespace}_${pod}_`));
  const files: { path: string; mtimeMs: number }[] = [];
  for (const podDir of podDirs) {
    const dir = join(root, podDir, container);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (!name.endsWith('.log')) continue;
      const path = join(dir, name);
      const info = await stat(path).catch(() => undefined);
      if (info) files.push({ path, mtimeMs: info.mtimeMs });
    }
  }
  files.sort((a, b) => a.mtimeMs - b.mtimeMs);
  const texts = await Promise.all(files.map((f) => readFile(f.path, 'utf8').catch(() => '')));
  return texts.flatMap(criLogLines);
}
