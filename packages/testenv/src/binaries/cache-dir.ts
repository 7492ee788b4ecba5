/** Where built binaries live: a per-user cache keyed by component and version, so a version bump never reuses stale binaries. */
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ComponentSpec } from '../versions.js';

/** `$KANRI_CACHE_DIR`, else `$XDG_CACHE_HOME/kanri`, else `~/.cache/kanri`. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KANRI_CACHE_DIR) return env.KANRI_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'kanri');
}

/** For example `~/.cache/kanri/kubernetes-v1.34.4`. */
export function componentDir(component: ComponentSpec, root = cacheRoot()): string {
  return join(root, `${component.name}-${component.version}`);
}

export function componentBinDir(component: ComponentSpec, root = cacheRoot()): string {
  return join(componentDir(component, root), 'bin');
}
