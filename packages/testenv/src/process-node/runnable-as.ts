/**
 * A process node runs an image's program as the image's user (say `postgres`, which refuses to
 * run as root). That user must be able to read the program: a checkout in a private directory
 * (under /root, for instance) is not readable. Then the built workspace (node_modules and every
 * package's package.json and dist, keeping the symlink layout) is staged once, as hard links where
 * possible, into a world-readable directory under the OS temp dir, keyed by the script's build time.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';

/** True when `user` may access `path` for `mode` (4 read, 5 read and execute), checked as that user. */
function accessibleBy(user: string, path: string, mode = 4): boolean {
  const check = `require("fs").accessSync(process.argv[1], ${mode})`;
  const result = spawnSync(
    'setpriv',
    [`--reuid=${user}`, `--regid=${user}`, '--init-groups', process.execPath, '-e', check, path],
    { stdio: 'ignore' },
  );
  return result.status === 0;
}

function readableBy(user: string, path: string): boolean {
  return accessibleBy(user, path, 4);
}

/** The outermost directory above `path` holding node_modules and a package.json: the workspace root. */
function workspaceRoot(path: string): string {
  let root: string | undefined;
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules')) && existsSync(join(dir, 'package.json'))) root = dir;
  }
  if (!root) throw new Error(`no node_modules above ${path}: cannot stage it for another user`);
  return root;
}

/**
 * Hard links when the temp dir is on the same filesystem (no space used, and the link bypasses
 * the private parent directory); a copy otherwise.
 */
function linkOrCopy(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  if (spawnSync('cp', ['-al', from, to], { stdio: 'ignore' }).status === 0) return;
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true, verbatimSymlinks: true });
}

/** Stages package.json and dist of the package directory `from` into `to`. */
function copyBuilt(from: string, to: string): void {
  if (existsSync(join(from, 'package.json'))) cpSync(join(from, 'package.json'), join(to, 'package.json'));
  if (existsSync(join(from, 'dist'))) linkOrCopy(join(from, 'dist'), join(to, 'dist'));
}

/** Removes staged copies of earlier builds (prefix `prefix`), once a day old. */
function pruneStale(current: string, prefix = 'kanri-staged-'): void {
  const dayAgo = Date.now() - 86_400_000;
  for (const entry of readdirSync(tmpdir())) {
    const path = join(tmpdir(), entry);
    if (!entry.startsWith(prefix) || path === current) continue;
    try {
      if (statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}

/**
 * `script`'s path, or that of a staged copy, such that `user` can read and run it. Without root
 * (no user switch happens) it is `script` itself.
 *
 * @example
 * ```ts
 * const agent = runnableAs('postgres', fileURLToPath(new URL('./agent/main.js', import.meta.url)));
 * await startControlPlane({
 *   processNodes: { count: 1, images: { 'ghcr.io/x/pg': { entrypoint: [process.execPath, agent], user: 'postgres' } } },
 * });
 * ```
 */
export function runnableAs(user: string, script: string): string {
  if (process.getuid?.() !== 0 || readableBy(user, script)) return script;
  const root = workspaceRoot(script);
  const stamp = Math.floor(statSync(script).mtimeMs).toString(36);
  const staged = join(tmpdir(), `kanri-staged-${stamp}`);
  const stagedScript = join(staged, relative(root, script));
  if (existsSync(stagedScript)) return stagedScript;
  const temp = `${staged}.${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { recursive: true, mode: 0o755 });
  pruneStale(staged);
  linkOrCopy(join(root, 'node_modules'), join(temp, 'node_modules'));
  copyBuilt(root, temp);
  if (existsSync(join(root, 'packages'))) {
    for (const pkg of readdirSync(join(root, 'packages'))) {
      copyBuilt(join(root, 'packages', pkg), join(temp, 'packages', pkg));
    }
  }
  if (existsSync(join(root, 'examples'))) copyBuilt(join(root, 'examples'), join(temp, 'examples'));
  spawnSync('chmod', ['-R', 'a+rX', temp]);
  try {
    renameSync(temp, staged);
  } catch {
    rmSync(temp, { recursive: true, force: true }); // another process staged it first
  }
  if (!existsSync(stagedScript)) throw new Error(`${script} is not part of the built workspace ${root}`);
  return stagedScript;
}

/**
 * `file`'s path, or that of a staged hard link or copy, such that `user` can read and execute it:
 * a binary in a private cache (pgBackRest under /root/.cache) run by the `postgres` OS user.
 * Without root (no user switch happens) it is `file` itself. The stage is keyed by the file's
 * name, size and mtime, so a new version gets a new path and a running process keeps its old one.
 *
 * @example
 * ```ts
 * const pgbackrest = runnableFileAs('postgres', await ensurePgBackRest());
 * // archive_command = '${pgbackrest} --stanza=db archive-push %p'
 * ```
 */
export function runnableFileAs(user: string, file: string): string {
  if (process.getuid?.() !== 0 || accessibleBy(user, file, 5)) return file;
  const { mtimeMs, size, mode } = statSync(file);
  const name = basename(file);
  const staged = join(tmpdir(), `kanri-file-${name}-${size.toString(36)}-${Math.floor(mtimeMs).toString(36)}`);
  const stagedFile = join(staged, name);
  if (existsSync(stagedFile)) return stagedFile;
  const temp = `${staged}.${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { mode: 0o755 });
  chmodSync(temp, 0o755); // mkdir's mode is masked by the umask
  pruneStale(staged, 'kanri-file-');
  const target = join(temp, name);
  // A hard link needs no space and bypasses the private parent directory, but shares the mode: it
  // only serves when everyone may already read and execute the file itself.
  let linked = false;
  if ((mode & 0o005) === 0o005) {
    try {
      linkSync(file, target);
      linked = true;
    } catch {
      // Another filesystem, or hard links refused: copy instead.
    }
  }
  if (!linked) {
    copyFileSync(file, target);
    chmodSync(target, 0o755);
  }
  try {
    renameSync(temp, staged);
  } catch {
    rmSync(temp, { recursive: true, force: true }); // another process staged it first
  }
  return stagedFile;
}

/**
 * `dir`'s path, or that of a staged copy (hard links where possible), such that `user` can read
 * and run everything in it: a relocatable installation in a private cache (a PostgreSQL build's
 * `bin` with its sibling `lib` and `share`, which is why the parent of `dir` is staged whole) run
 * by the `postgres` OS user. Keyed by the parent's name and mtime. Without root it is `dir` itself.
 *
 * @example
 * ```ts
 * const pgBin = runnableDirAs('postgres', await ensurePostgres('16')); // …/bin
 * ```
 */
export function runnableDirAs(user: string, dir: string): string {
  if (process.getuid?.() !== 0 || accessibleBy(user, join(dir, '.'), 5)) return dir;
  const install = dirname(dir);
  const staged = join(
    tmpdir(),
    `kanri-tree-${basename(install)}-${Math.floor(statSync(install).mtimeMs).toString(36)}`,
  );
  const stagedDir = join(staged, basename(dir));
  if (existsSync(stagedDir)) return stagedDir;
  const temp = `${staged}.${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  pruneStale(staged, 'kanri-tree-');
  linkOrCopy(install, temp);
  spawnSync('chmod', ['-R', 'a+rX', temp]);
  try {
    renameSync(temp, staged);
  } catch {
    rmSync(temp, { recursive: true, force: true }); // another process staged it first
  }
  return stagedDir;
}
