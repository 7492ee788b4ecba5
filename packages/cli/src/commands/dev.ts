/** `kanri dev`: a local control plane for people, started in the background (`up`) and stopped later (`down`). */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type BinaryName, ensureBinaries, isProcessAlive, KUBERNETES_VERSION, startControlPlane } from '@kanri/testenv';
import { Command, Option } from 'commander';
import { clearDevState, type DevState, devStateDir, readDevState, writeDevState } from '../dev-state.js';
import { parseNodeCount, waitForShutdownSignal } from '../options.js';
import { runDemo } from './demo.js';
import { devRunCommand } from './run-operator.js';

interface UpOptions {
  readonly nodes: number;
  readonly controllers: boolean;
}

const mainScript = fileURLToPath(new URL('../main.js', import.meta.url));

function printHowToUse(state: DevState): void {
  console.log(`Local control plane is up at ${state.server} (supervisor PID ${state.pid}).`);
  console.log('Point kubectl at it with:');
  console.log(`export KUBECONFIG=${state.kubeconfigPath}`);
  if (state.kubectl) console.log(`A matching kubectl (${KUBERNETES_VERSION}) is at ${state.kubectl}`);
  console.log('Stop it with: kanri dev down');
}

function binariesFor(options: UpOptions): BinaryName[] {
  const names: BinaryName[] = ['etcd', 'kube-apiserver', 'kubectl'];
  if (options.controllers || options.nodes > 0) names.push('kube-controller-manager', 'kube-scheduler');
  if (options.nodes > 0) names.push('kwok');
  return names;
}

async function up(options: UpOptions): Promise<void> {
  const current = await readDevState();
  if (current && isProcessAlive(current.pid)) {
    console.log('A local control plane is already running.');
    printHowToUse(current);
    return;
  }
  // Build in the foreground so the person sees progress; the supervisor then starts in seconds.
  await ensureBinaries({ binaries: binariesFor(options) });
  const dir = devStateDir();
  mkdirSync(dir, { recursive: true });
  const logFile = join(dir, 'supervisor.log');
  const log = openSync(logFile, 'w');
  const args = [
    mainScript,
    'dev',
    'serve',
    '--nodes',
    String(options.nodes),
    ...(options.controllers ? ['--controllers'] : []),
  ];
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const state = await readDevState();
    if (state && state.pid === child.pid) return printHowToUse(state);
    if (exited) break;
    await sleep(200);
  }
  if (!exited && child.pid) process.kill(child.pid, 'SIGTERM');
  throw new Error(`kanri dev up: the control plane did not start; see ${logFile}`);
}

/** The supervisor: owns the control plane until SIGTERM/SIGINT, then stops it and clears the state. */
async function serve(options: UpOptions): Promise<void> {
  const cp = await startControlPlane({ controllers: options.controllers, nodes: options.nodes });
  const state: DevState = {
    pid: process.pid,
    server: cp.server,
    kubeconfigPath: cp.kubeconfigPath,
    startedAt: new Date().toISOString(),
    nodes: options.nodes,
    controllers: options.controllers || options.nodes > 0,
    kubectl: cp.binaries.kubectl,
  };
  await writeDevState(state);
  console.log(`supervisor ${process.pid}: control plane ready at ${cp.server}`);
  const signal = await waitForShutdownSignal();
  console.log(`supervisor ${process.pid}: ${signal} received, stopping`);
  await cp.stop();
  await clearDevState();
}

async function down(): Promise<void> {
  const state = await readDevState();
  if (!state || !isProcessAlive(state.pid)) {
    await clearDevState();
    console.log('No local control plane is running.');
    return;
  }
  process.kill(state.pid, 'SIGTERM');
  const deadline = Date.now() + 60_000;
  while (isProcessAlive(state.pid)) {
    if (Date.now() > deadline) throw new Error(`kanri dev down: supervisor PID ${state.pid} did not exit within 60 s`);
    await sleep(100);
  }
  await clearDevState();
  console.log(`Stopped the local control plane (supervisor PID ${state.pid}).`);
}

async function status(): Promise<void> {
  const state = await readDevState();
  if (!state || !isProcessAlive(state.pid)) {
    console.log('No local control plane is running. Start one with: kanri dev up');
    process.exitCode = 1;
    return;
  }
  printHowToUse(state);
}

const nodesOption = () =>
  new Option('--nodes <count>', 'run kwok with this many fake nodes (implies --controllers)')
    .argParser(parseNodeCount)
    .default(0);
const controllersOption = () =>
  new Option('--controllers', 'also run kube-controller-manager and kube-scheduler').default(false);

export function devCommand(): Command {
  const command = new Command('dev').description('Run a real local Kubernetes control plane for development');
  command
    .command('up')
    .description('Start the control plane in the background and print how to point kubectl at it')
    .addOption(nodesOption())
    .addOption(controllersOption())
    .action((options: UpOptions) => up(options));
  command.command('down').description('Stop the control plane started by `kanri dev up`').action(down);
  command
    .command('status')
    .description('Say whether a control plane is running, and where (exit code 1 if not)')
    .action(status);
  // With controllers, so that deleting a custom resource deletes its children (garbage collection).
  command.addCommand(devRunCommand(() => up({ nodes: 0, controllers: true })));
  command
    .command('serve', { hidden: true })
    .description('Run the control plane in the foreground until SIGTERM (what `up` starts)')
    .addOption(nodesOption())
    .addOption(controllersOption())
    .action((options: UpOptions) => serve(options));
  command
    .command('demo')
    .description(
      'Start a control plane with 2 nodes, deploy a 3-replica Deployment, show it Ready, and keep running until Ctrl-C',
    )
    .option('--once', 'stop and exit after showing it works', false)
    .action((options: { once: boolean }) => runDemo(options));
  return command;
}
