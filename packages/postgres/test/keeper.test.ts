/**
 * The keeper as a process, with stand-ins: a small script plays the agent (it speaks the IPC
 * protocol and prints every message it gets), and a Node.js process plays the postmaster (it prints
 * its environment's names and exits 3 on SIGQUIT, 2 on SIGINT). Seconds, no PostgreSQL needed.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isProcessAlive, waitFor, withParentDeathSignal } from '@kanri/testenv';

// Compiled to dist/test: the agent's modules are in dist/src/agent.
const dist = new URL('../src/agent/', import.meta.url).href;

/** The stand-in postmaster, as argv for the keeper's `start`. */
const FAKE_POSTGRES = [
  process.execPath,
  '-e',
  `process.on('SIGQUIT', () => process.exit(3)); process.on('SIGINT', () => process.exit(2));
   console.log('fake postgres sees ' + Object.keys(process.env).join(','));
   setInterval(() => {}, 1000);`,
];

/** Lines the agent stand-in prints start with this; the rest of the output is the keeper's log. */
const SAW = 'SAW ';

/** The agent stand-in: `body` runs with `send`, `ask` (a request with an id), `now` and `saw(message)`. */
function agentScript(body: string): string {
  return `
let id = 0;
const send = (m) => process.send(m);
const ask = (m) => send({ ...m, id: ++id });
const now = () => Number(process.hrtime.bigint() / 1000n) / 1000;
const start = () => ask({ type: 'start', command: ${JSON.stringify(FAKE_POSTGRES[0])}, args: ${JSON.stringify(FAKE_POSTGRES.slice(1))} });
process.on('SIGTERM', () => process.exit(0));
const handlers = [];
process.on('message', (m) => {
  process.stdout.write(${JSON.stringify(SAW)} + JSON.stringify({ agent: process.pid, ...m }) + '\\n');
  for (const h of handlers) h(m);
});
const on = (h) => handlers.push(h);
${body}
`;
}

interface Run {
  readonly keeper: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Every message the agent stand-ins got, in order. */
  saw(): Record<string, unknown>[];
  output(): string;
}

describe('the keeper', () => {
  let dir: string;
  const runs: Run[] = [];

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kanri-keeper-'));
  });
  after(() => {
    for (const run of runs)
      if (run.keeper.exitCode === null && run.keeper.signalCode === null) run.keeper.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const runKeeper = (name: string, agentBody: string): Run => {
    const agent = join(dir, `${name}-agent.mjs`);
    writeFileSync(agent, agentScript(agentBody));
    const main = join(dir, `${name}-keeper.mjs`);
    writeFileSync(
      main,
      `import { runKeeper } from '${dist}keeper/keeper.js';
       import { createAgentLogger } from '${dist}log/logger.js';
       import { Redactor } from '${dist}log/redactor.js';
       const log = createAgentLogger(new Redactor(), { component: 'keeper' });
       runKeeper({ script: ${JSON.stringify(agent)}, secretVariables: ['KANRI_TEST_SECRET'], log }).then((code) => process.exit(code));`,
    );
    const keeper = spawn(...withParentDeathSignal(process.execPath, [main]), {
      env: { ...process.env, KANRI_TEST_SECRET: 'x', KANRI_AGENT_PROCESS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    keeper.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    keeper.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const run: Run = {
      keeper,
      exited: new Promise((resolve) => keeper.once('exit', (code) => resolve(code))),
      saw: () =>
        output
          .split('\n')
          .filter((line) => line.startsWith(SAW))
          .map((line) => JSON.parse(line.slice(SAW.length)) as Record<string, unknown>),
      output: () => output,
    };
    runs.push(run);
    return run;
  };
  const seen = (run: Run, type: string) => run.saw().filter((m) => m.type === type);

  it('stops postgres when the watchdog is not fed in time, refuses to start it until fed again, and relays its output without the secrets', async () => {
    const run = runKeeper(
      'watchdog',
      `let armed = false;
       on((m) => {
         if (m.type === 'state') start();
         // Fed once, 300 ms ahead, then never again: as if the agent were stalled. After postgres's
         // first line, so that it has its signal handlers.
         if (m.type === 'line' && !armed) { armed = true; send({ type: 'arm', untilMonotonicMs: now() + 300 }); }
         if (m.type === 'exit') start();
         // A deadline ahead again (a renewed leadership) lets it start.
         if (m.type === 'refused') { send({ type: 'arm', untilMonotonicMs: now() + 60_000 }); start(); }
       });
       ask({ type: 'hello' });`,
    );
    await waitFor('postgres started again after the watchdog fired', () => seen(run, 'started').length === 2, 20_000);
    const types = run.saw().map((m) => m.type);
    const [first, second] = seen(run, 'started').map((m) => m.pid as number);
    assert.deepEqual(
      types.filter((t) => t !== 'line'),
      ['state', 'started', 'fired', 'exit', 'refused', 'started'],
      run.output(),
    );
    const fired = seen(run, 'fired')[0];
    assert.equal(fired?.pid, first);
    assert.ok((fired?.lateMs as number) >= 0);
    assert.deepEqual(
      seen(run, 'exit').map((m) => [m.pid, m.code]),
      [[first, 3]],
      'stopped with SIGQUIT (immediate shutdown)',
    );
    assert.match(String(seen(run, 'refused')[0]?.reason), /watchdog fired/);
    assert.equal(isProcessAlive(first as number), false);
    assert.match(run.output(), /WATCHDOG/);
    const line = String(seen(run, 'line')[0]?.line);
    assert.match(line, /^fake postgres sees .*PATH/);
    assert.doesNotMatch(line, /KANRI_TEST_SECRET|KANRI_AGENT_PROCESS/);
    // SIGTERM goes to the agent; the postgres it left running is stopped (fast) before the keeper exits.
    run.keeper.kill('SIGTERM');
    assert.equal(await run.exited, 0);
    assert.equal(isProcessAlive(second as number), false);
  });

  it('restarts a dead agent at once with postgres still running, and the new agent finds it', async () => {
    const marker = join(dir, 'second-run');
    const run = runKeeper(
      'restart',
      `import { existsSync, writeFileSync } from 'node:fs';
       const again = existsSync(${JSON.stringify(marker)});
       on((m) => {
         if (m.type === 'state' && !again) start();
         // The first agent dies (as kill -9 would end it) once postgres runs.
         if (m.type === 'started') { writeFileSync(${JSON.stringify(marker)}, ''); process.kill(process.pid, 'SIGKILL'); }
       });
       ask({ type: 'hello' });`,
    );
    await waitFor('the second agent to ask what runs', () => seen(run, 'state').length === 2, 20_000);
    const [started] = seen(run, 'started');
    const [before, afterRestart] = seen(run, 'state');
    assert.equal(before?.pid, undefined);
    assert.equal(afterRestart?.pid, started?.pid, 'the same postgres runs for the new agent');
    assert.notEqual(afterRestart?.agent, before?.agent);
    assert.ok(isProcessAlive(started?.pid as number));
    assert.match(run.output(), /the agent exited unexpectedly; restarting it/);
    run.keeper.kill('SIGTERM');
    assert.equal(await run.exited, 0);
    assert.equal(isProcessAlive(started?.pid as number), false);
  });

  it('fails with the agent when the agent fails before attaching and no postgres runs', async () => {
    const run = runKeeper('early', 'process.exit(7);');
    assert.equal(await run.exited, 7);
    assert.match(run.output(), /the agent failed before it started/);
  });

  it('a postgres whose keeper is killed gets its parent-death signal', async () => {
    const run = runKeeper('orphan', `on((m) => { if (m.type === 'state') start(); }); ask({ type: 'hello' });`);
    await waitFor('postgres to start', () => seen(run, 'started').length === 1, 20_000);
    const pid = seen(run, 'started')[0]?.pid as number;
    const agent = seen(run, 'started')[0]?.agent as number;
    run.keeper.kill('SIGKILL');
    await run.exited;
    await waitFor(
      'postgres and the agent to die with their keeper',
      () => !isProcessAlive(pid) && !isProcessAlive(agent),
      10_000,
    );
  });
});
