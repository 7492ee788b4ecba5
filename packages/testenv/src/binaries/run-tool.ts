/**
 * Runs a tool a cache entry is fetched or unpacked with, turning a missing tool and a failure into
 * a BinaryBuildError that names the component and the cure.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { errnoCode } from '../errno.js';
import { BinaryBuildError } from '../errors.js';

const run = promisify(execFile);

export interface ToolOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Resolves the tool's stdout.
 *
 * @example
 * ```ts
 * await runTool('pgbackrest', 'install apt and dpkg', 'dpkg-deb', ['-x', deb, dir]);
 * ```
 */
export async function runTool(
  component: string,
  missingHint: string,
  command: string,
  args: readonly string[],
  options: ToolOptions = {},
): Promise<string> {
  try {
    const { stdout } = await run(command, args as string[], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env, LC_ALL: 'C' },
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') {
      throw new BinaryBuildError(component, `${component}: \`${command}\` was not found. ${missingHint}`, '', {
        cause: error,
      });
    }
    const output = error instanceof Error && 'stderr' in error ? String(error.stderr) : '';
    throw new BinaryBuildError(component, `${component}: \`${command} ${args.join(' ')}\` failed`, output.trim(), {
      cause: error,
    });
  }
}
