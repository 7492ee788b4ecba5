#!/usr/bin/env node
/**
 * postgres's `archive_command` (`pgbackrest-archive-push.js <agent socket> %p`; pgBackRest's backup
 * checks that the command names pgbackrest, which this file's name does). It asks the agent on its
 * local socket for a permit first, so only the instance that leads the cluster right now writes
 * into the repo: a fenced or former primary is refused, and postgres keeps the segment and retries.
 * With a permit it runs `pgbackrest archive-push` (asynchronous, spooled on the data volume) and
 * tells the agent how it went, for the archive's health in the status.
 *
 * Exit codes follow postgres's rule: 0 only when the segment is safely archived (or archiving is
 * off, when no repo is declared), anything else and postgres retries the same segment.
 * Imports stay minimal: postgres starts this once per segment.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';

export type ArchivePermit =
  | { readonly action: 'push'; readonly bin: string; readonly args: readonly string[] }
  | { readonly action: 'skip'; readonly reason: string }
  | { readonly action: 'refuse'; readonly reason: string };

export interface ArchiveOutcome {
  readonly wal: string;
  readonly ok: boolean;
  readonly reason?: string;
  /**
   * pgBackRest's asynchronous queue was full (`archive-push-queue-max`): it dropped WAL and reported
   * success, so the database lives on, but point-in-time recovery cannot cross this gap.
   */
  readonly dropped?: string;
}

function call(socketPath: string, method: string, path: string, body?: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () =>
        res.statusCode === 200 ? resolve(text) : reject(new Error(`agent answered ${res.statusCode}: ${text}`)),
      );
    });
    req.on('timeout', () => req.destroy(new Error('the agent did not answer within 10 s')));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

function push(bin: string, args: readonly string[]): Promise<{ code: number | null; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, [...args], { stdio: ['ignore', 'inherit', 'pipe'] });
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      process.stderr.write(chunk);
      tail = (tail + chunk).slice(-2_000);
    });
    child.once('error', (error) => resolve({ code: null, tail: error.message }));
    child.once('close', (code) => resolve({ code, tail }));
  });
}

async function main(): Promise<number> {
  const [socketPath, walPath] = process.argv.slice(2);
  if (!socketPath || !walPath) {
    process.stderr.write('usage: pgbackrest-archive-push <agent socket> <%p>\n');
    return 2;
  }
  const wal = walPath.split('/').pop() ?? walPath;
  let permit: ArchivePermit;
  try {
    permit = JSON.parse(await call(socketPath, 'GET', '/archive-permit')) as ArchivePermit;
  } catch (error) {
    process.stderr.write(`kanri: not archiving ${wal}: no permit from the agent (${(error as Error).message})\n`);
    return 1;
  }
  if (permit.action === 'skip') return 0;
  if (permit.action === 'refuse') {
    process.stderr.write(`kanri: not archiving ${wal}: ${permit.reason}\n`);
    return 1;
  }
  const { code, tail } = await push(permit.bin, [...permit.args, 'archive-push', walPath]);
  const reason = /ERROR: \[\d+\]: [^\n]*/.exec(tail)?.[0] ?? tail.trim().split('\n').pop();
  const dropped = /dropped WAL file[^\n]*/.exec(tail)?.[0];
  const outcome: ArchiveOutcome =
    code === 0
      ? { wal, ok: true, ...(dropped ? { dropped } : {}) }
      : { wal, ok: false, reason: reason || `exit ${code}` };
  await call(socketPath, 'POST', '/archive-result', outcome).catch(() => undefined);
  return code === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`kanri: archive command failed: ${String(error)}\n`);
    process.exit(1);
  },
);
