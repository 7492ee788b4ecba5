/**
 * A process node runs an image's program as the image's user (say `postgres`, which refuses to
 * run as root). That user must be able to read the program: a checkout in a private directory
 * (under /root, for instance) is not readable. Then the built workspace (node_modules and every
 * package's package.json and dist, keeping the symlink layout) is staged once, as hard links where
 * possible, keyed by the script's build time, into this user's stage root in the OS temp dir
 * (`stageRoot`): readable by every user, writable by this one alone, and never a directory another
 * user could have created or filled, since what is staged there runs as the Pod's user.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { ensureTrustedDirectory } from '../trusted-dir.js';

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
 * the private parent directory); a copy otherwise. `to` is created, or filled when it exists.
 */
function linkOrCopy(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  const source = existsSync(to) ? `${from}/.` : from;
  if (spawnSync('cp', ['-al', source, to], { stdio: 'ignore' }).status === 0) return;
  cpSync(from, to, { recursive: true, verbatimSymlinks: true, force: true });
}

/** Stages package.json and dist of the package directory `from` into `to`. */
function copyBuilt(from: string, to: string): void {
  if (existsSync(join(from, 'package.json'))) cpSync(join(from, 'package.json'), join(to, 'package.json'));
  if (existsSync(join(from, 'dist'))) linkOrCopy(join(from, 'dist'), join(to, 'dist'));
}

const DAY_MS = 86_400_000;
/** Where releases before the stage root staged straight into the temp dir. */
const LEGACY_PREFIXES = ['kanri-staged-', 'kanri-file-', 'kanri-tree-'];

/**
 * Removes stages (and abandoned fillings) of earlier versions once a day old, and this user's own
 * stages of earlier releases from the temp dir; another user's entries there are left alone.
 */
function pruneStale(root: string, current: string): void {
  const dayAgo = Date.now() - DAY_MS;
  const uid = process.getuid?.();
  const candidates = [
    ...readdirSync(root).map((entry) => join(root, entry)),
    ...readdirSync(tmpdir())
      .filter((entry) => LEGACY_PREFIXES.some((prefix) => entry.startsWith(prefix)))
      .map((entry) => join(tmpdir(), entry)),
  ];
  for (const path of candidates) {
    if (path === current) continue;
    try {
      const stats = lstatSync(path);
      if (stats.isDirectory() && stats.uid === uid && stats.mtimeMs < dayAgo)
        rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}

/**
 * The directory every stage of this user lives in: `kanri-stage-<uid>` in the OS temp dir (or
 * `base`), created by this user, 0711 (the users Pods run as may pass through to what they are
 * given, nobody else may write), and refused when another user could have put anything there
 * (`ensureTrustedDirectory`): what is staged runs as another OS user, so a planted program there
 * would run in its place.
 *
 * @example
 * ```ts
 * stageRoot(); // '/tmp/kanri-stage-0'
 * ```
 */
export function stageRoot(base = tmpdir()): string {
  const root = join(base, `kanri-stage-${process.getuid?.() ?? 'user'}`);
  ensureTrustedDirectory(root, 0o711);
  return root;
}

/**
 * `name` in `root`, filled once by `fill` (given a fresh directory made by mkdtemp, 0700 while it
 * is filled, which makes what it puts there readable) and then opened to everyone and renamed
 * into place, so that a stage is whole or absent. Parallel processes race by the rename; the
 * loser's copy is removed.
 */
function stageOnce(root: string, name: string, fill: (dir: string) => void): string {
  const staged = join(root, name);
  if (existsSync(staged)) return staged;
  const temp = mkdtempSync(join(root, `.${name}-`));
  pruneStale(root, staged);
  try {
    fill(temp);
    chmodSync(temp, 0o755);
    renameSync(temp, staged);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    if (!existsSync(staged)) throw error; // else another process staged it first
  }
  return staged;
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
  const staged = stageOnce(stageRoot(), `staged-${stamp}`, (temp) => {
    linkOrCopy(join(root, 'node_modules'), join(temp, 'node_modules'));
    copyBuilt(root, temp);
    if (existsSync(join(root, 'packages'))) {
      for (const pkg of readdirSync(join(root, 'packages'))) {
        copyBuilt(join(root, 'packages', pkg), join(temp, 'packages', pkg));
      }
    }
    if (existsSync(join(root, 'examples'))) copyBuilt(join(root, 'examples'), join(temp, 'examples'));
    spawnSync('chmod', ['-R', 'a+rX', temp]);
  });
  const stagedScript = join(staged, relative(root, script));
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
export function runnableFileAs(user: string, file: string, options: { readonly stageBase?: string } = {}): string {
  if (process.getuid?.() !== 0 || accessibleBy(user, file, 5)) return file;
  const { mtimeMs, size, mode } = statSync(file);
  const name = basename(file);
  const stage = `file-${name}-${size.toString(36)}-${Math.floor(mtimeMs).toString(36)}`;
  const staged = stageOnce(stageRoot(options.stageBase), stage, (temp) => {
    const target = join(temp, name);
    // A hard link needs no space and bypasses the private parent directory, but shares the mode:
    // it only serves when everyone may already read and execute the file itself.
    if ((mode & 0o005) === 0o005) {
      try {
        linkSync(file, target);
        return;
      } catch {
        // Another filesystem, or hard links refused: copy instead.
      }
    }
    copyFileSync(file, target);
    chmodSync(target, 0o755);
  });
  return join(staged, name);
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
  const stage = `tree-${basename(install)}-${Math.floor(statSync(install).mtimeMs).toString(36)}`;
  return join(
    stageOnce(stageRoot(), stage, (temp) => {
      linkOrCopy(install, temp);
      spawnSync('chmod', ['-R', 'a+rX', temp]);
    }),
    basename(dir),
  );
}
