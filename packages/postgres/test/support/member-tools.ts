/**
 * Runs the agent's own PGDATA tools (agent/postgres: initdb, pg_basebackup, pg_rewind) in a child
 * process as the user it is started as, for tests that run as root: pg_rewind refuses to run as
 * root, and postgres needs its data directory to be its own. `runMemberTool` starts it as
 * `postgres`; the child reads one request from its arguments and prints one JSON answer.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { Redactor } from '../../src/agent/log/redactor.js';
import type { MemberTarget } from '../../src/agent/plan/member-connection.js';
import { basebackup, initdb } from '../../src/agent/postgres/bootstrap.js';
import { type RewindResult, rewind } from '../../src/agent/postgres/rewind.js';

export type MemberToolRequest =
  | { readonly tool: 'initdb'; readonly superuserPassword: string }
  | {
      readonly tool: 'basebackup';
      readonly target: MemberTarget;
      readonly slot: string;
      readonly applicationName: string;
      readonly replicationPassword: string;
    }
  | { readonly tool: 'rewind'; readonly source: MemberTarget; readonly replicationPassword: string };

interface Common {
  readonly pgBin: string;
  readonly pgdata: string;
  readonly runDir: string;
}

/** The tool's result (rewind's), or the message of the error it failed with. */
export type MemberToolAnswer =
  | { readonly ok: true; readonly result?: RewindResult }
  | { readonly ok: false; readonly error: string };

const SELF = fileURLToPath(import.meta.url);

/**
 * Runs `request` as the postgres user and resolves its answer.
 *
 * @example
 * ```ts
 * const answer = await runMemberTool({ pgBin, pgdata, runDir }, { tool: 'rewind', source, replicationPassword });
 * ```
 */
export async function runMemberTool(common: Common, request: MemberToolRequest): Promise<MemberToolAnswer> {
  const { stdout } = await promisify(execFile)(
    '/usr/bin/setpriv',
    [
      '--reuid=postgres',
      '--regid=postgres',
      '--init-groups',
      '--pdeathsig',
      'KILL',
      '--',
      process.execPath,
      SELF,
      JSON.stringify({ ...common, ...request }),
    ],
    { env: { PATH: process.env.PATH, LC_ALL: 'C' }, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as MemberToolAnswer;
}

async function serve(request: Common & MemberToolRequest): Promise<MemberToolAnswer> {
  const context = {
    pgBin: request.pgBin,
    pgdata: request.pgdata,
    runDir: request.runDir,
    log: pino({ level: 'silent' }),
    redactor: new Redactor(),
  };
  try {
    switch (request.tool) {
      case 'initdb':
        await initdb(context, request.superuserPassword);
        return { ok: true };
      case 'basebackup':
        await basebackup(context, request);
        return { ok: true };
      case 'rewind':
        return { ok: true, result: await rewind({ ...context, ...request }) };
    }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

if (process.argv[1] === SELF) {
  const answer = await serve(JSON.parse(process.argv[2] ?? '{}'));
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
