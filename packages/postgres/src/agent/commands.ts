/**
 * Runs PostgreSQL's tools (initdb, pg_basebackup) as children that die with the agent, streams
 * their output to the log (redacted) and fails with the tail of it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Logger } from './log/logger.js';
import type { Redactor } from './log/redactor.js';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/**
 * The argv that starts `command` so it receives `signal` when its parent (the agent, or the keeper)
 * dies (Linux parent-death signal through util-linux setpriv); unchanged where setpriv is missing.
 */
export function withParentDeathSignal(command: string, args: readonly string[], signal = 'KILL'): [string, string[]] {
  return SETPRIV ? [SETPRIV, ['--pdeathsig', signal, '--', command, ...args]] : [command, [...args]];
}

export class CommandError extends Error {
  override name = 'CommandError';
}

export interface RunOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Where the tool runs (pg_upgrade writes its logs there). */
  readonly cwd?: string;
  readonly log: Logger;
  readonly redactor: Redactor;
  readonly signal?: AbortSignal;
  /** Written to the tool's standard input, which is closed after it; without it there is none. */
  readonly input?: string;
}

/** Runs a tool to completion; rejects with a redacted message naming it and its last output lines. */
export function runCommand(command: string, args: readonly string[], options: RunOptions): Promise<void> {
  const [file, argv] = withParentDeathSignal(command, args);
  const tool = command.split('/').pop() ?? command;
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    // A tool that exits before reading all of it closes the pipe: its exit code says why, not EPIPE.
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.input);
    const tail: string[] = [];
    const onLine = (line: string) => {
      if (!line.trim()) return;
      tail.push(line);
      if (tail.length > 20) tail.shift();
      options.log.info({ tool }, line);
    };
    forEachLine(child.stdout, onLine);
    forEachLine(child.stderr, onLine);
    const abort = () => child.kill('SIGTERM');
    options.signal?.addEventListener('abort', abort, { once: true });
    child.once('error', (error) => {
      options.signal?.removeEventListener('abort', abort);
      reject(new CommandError(`${tool} could not start: ${options.redactor.describe(error)}`));
    });
    child.once('close', (code, signal) => {
      options.signal?.removeEventListener('abort', abort);
      if (code === 0) return resolve();
      const why = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      reject(new CommandError(options.redactor.redact(`${tool} ${why}: ${tail.slice(-5).join(' | ')}`)));
    });
  });
}

/** Calls `onLine` for each line of a readable stream (a trailing partial line included). */
export function forEachLine(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  });
  stream.on('end', () => {
    if (buffered) onLine(buffered);
    buffered = '';
  });
}
