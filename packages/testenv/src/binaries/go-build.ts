/** Runs a planned Go build, turning `go build -v` output into progress events and failures into BinaryBuildError. */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { errnoCode } from '../errno.js';
import { BinaryBuildError } from '../errors.js';
import type { BuildPhase, ProgressListener } from './build-progress.js';
import type { GoBuildPlan, GoCommand } from './go-build-plan.js';

const TAIL_LINES = 40;

interface RunOptions {
  readonly component: string;
  readonly onLine?: (line: string) => void;
}

/** Runs `go` and resolves with its stdout lines; rejects with the tail of its output. */
function runGo(command: GoCommand, options: RunOptions): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', command.args as string[], {
      cwd: command.cwd,
      env: { ...process.env, GOFLAGS: process.env.GOFLAGS ?? '-buildvcs=false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: string[] = [];
    const tail: string[] = [];
    const remember = (line: string) => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      options.onLine?.(line);
    };
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout.push(line);
      remember(line);
    });
    createInterface({ input: child.stderr }).on('line', remember);
    child.on('error', (error) => {
      const hint =
        errnoCode(error) === 'ENOENT'
          ? 'the `go` command was not found; install Go 1.26 or set KUBEBUILDER_ASSETS to a directory holding the binaries'
          : `could not run go ${command.args[0]}`;
      reject(new BinaryBuildError(options.component, `${options.component}: ${hint}`, '', { cause: error }));
    });
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(stdout);
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      reject(
        new BinaryBuildError(
          options.component,
          `${options.component}: \`go ${command.args.slice(0, 2).join(' ')} …\` in ${command.cwd} ${how}`,
          tail.join('\n'),
        ),
      );
    });
  });
}

/** Executes `plan`, reporting each phase and per-package compile progress. */
export async function runGoBuild(plan: GoBuildPlan, onProgress: ProgressListener): Promise<void> {
  const { name, version } = plan.component;
  const started = Date.now();
  const report = (phase: BuildPhase, built?: number, total?: number) =>
    onProgress({ component: name, version, phase, built, total, elapsedMs: Date.now() - started });
  // A heartbeat keeps the progress line moving during phases that print nothing for minutes.
  let phase: BuildPhase = 'downloading';
  let built = 0;
  let total = 0;
  const heartbeat = setInterval(() => report(phase, built, total), 5_000);
  try {
    report(phase);
    await runGo(plan.download, { component: name });
    phase = 'resolving';
    report(phase);
    total = (await runGo(plan.list, { component: name })).filter((l) => l.trim()).length;
    phase = 'compiling';
    report(phase, 0, total);
    await runGo(plan.build, {
      component: name,
      onLine: (line) => {
        // -v names each package as it compiles; other lines (warnings, errors) are not packages.
        if (/^[\w.-]+(\/[\w.~-]+)*$/.test(line)) report(phase, ++built, total);
      },
    });
    if (plan.bundle) {
      const [moduleDir] = await runGo(plan.bundle.locate, { component: name });
      const parts = await Promise.all(plan.bundle.files.map((f) => readFile(join(moduleDir ?? '', f), 'utf8')));
      await writeFile(plan.bundle.output, parts.map((p) => p.trim()).join('\n---\n'));
    }
    report('done', built, total);
  } finally {
    clearInterval(heartbeat);
  }
}
