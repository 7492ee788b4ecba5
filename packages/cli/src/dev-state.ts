/** The record `kanri dev up` leaves so that `down` and `status` can find the running control plane. */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface DevState {
  /** PID of the supervisor process that owns the control plane. */
  readonly pid: number;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly startedAt: string;
  readonly nodes: number;
  readonly controllers: boolean;
  /** The kubectl built with the control plane, if any. */
  readonly kubectl?: string;
}

/** `$KANRI_STATE_DIR`, else `$XDG_STATE_HOME/kanri/dev`, else `~/.local/state/kanri/dev`. */
export function devStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KANRI_STATE_DIR) return env.KANRI_STATE_DIR;
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'kanri', 'dev');
}

const stateFile = (dir: string) => join(dir, 'state.json');

export async function readDevState(dir = devStateDir()): Promise<DevState | undefined> {
  try {
    return JSON.parse(await readFile(stateFile(dir), 'utf8')) as DevState;
  } catch {
    return undefined;
  }
}

/** Written via rename so a reader never sees half a file. */
export async function writeDevState(state: DevState, dir = devStateDir()): Promise<void> {
  await mkdir(dir, { recursive: true });
  const temp = `${stateFile(dir)}.${process.pid}`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`);
  await rename(temp, stateFile(dir));
}

export async function clearDevState(dir = devStateDir()): Promise<void> {
  await rm(stateFile(dir), { force: true });
}
