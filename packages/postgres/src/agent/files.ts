/** Small file helpers: atomic writes that report whether anything changed. */
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Contents of `path`, or undefined if it does not exist. */
export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Writes `content` to `path` through a temporary file, fsync and rename, so postgres never reads a
 * half-written file. Resolves false (and writes nothing) when the file already holds `content`.
 */
export async function writeFileIfChanged(path: string, content: string, mode = 0o600): Promise<boolean> {
  if ((await readIfExists(path)) === content) return false;
  const temporary = `${path}.kanri-tmp`;
  const handle = await open(temporary, 'w', mode);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await fsyncDir(dirname(path));
  return true;
}

/** Makes a rename in `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
