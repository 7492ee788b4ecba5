/** `ip` (iproute2), in the host's network namespace or a node's. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { TestenvError } from '../errors.js';

const exec = promisify(execFile);

/** Runs `ip` with `args`; the error names the command and carries ip's own message. */
export async function ip(args: readonly string[], namespacePid?: number): Promise<string> {
  const [command, full] =
    namespacePid === undefined ? ['ip', args] : ['nsenter', ['-t', String(namespacePid), '-n', 'ip', ...args]];
  try {
    return (await exec(command, full as string[], { env: { ...process.env, LC_ALL: 'C' } })).stdout;
  } catch (error) {
    const stderr = error instanceof Error && 'stderr' in error ? String(error.stderr).trim() : String(error);
    throw new TestenvError(`\`${command} ${full.join(' ')}\` failed: ${stderr}`, { cause: error });
  }
}
