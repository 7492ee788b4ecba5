/** Runs the built `kanri` CLI as a child process and returns its exit code and output. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
export const kanriMain = fileURLToPath(new URL('../src/main.js', import.meta.url));

export interface KanriResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runKanri(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<KanriResult> {
  return execFileAsync(process.execPath, [kanriMain, ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { ...process.env, ...options.env },
    timeout: options.timeoutMs ?? 60_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}
