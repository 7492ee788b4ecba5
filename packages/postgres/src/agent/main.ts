#!/usr/bin/env node
/**
 * The agent image's entrypoint. With no argument it is the keeper (keeper/keeper.ts), the main
 * process of every Postgres Pod, which runs this same script again as the instance agent (marked by
 * AGENT_PROCESS_ENV) and runs postgres for it, as its watchdog. The instance agent reads its
 * environment (see ENV in the contract), serves /healthz, /readyz and /metrics on POD_IP:8000,
 * runs postgres through the keeper, and on SIGTERM (passed on by the keeper) stops postgres (fast),
 * releases the Lease if it held it, and exits 0. With the argument `repo-host` it is the cluster's
 * repo host (contract/repo-host.ts), which serves the volume repos and runs the backups.
 *
 * The agent and the repo host are imported only in their own process (agent-process.ts): the
 * keeper, a watchdog, loads the little it runs, not the Kubernetes client, zod, undici and the
 * agent's planners: it starts in 0.11 CPU-s where it took 0.53, on every instance Pod's start.
 */
import { fileURLToPath } from 'node:url';
import { ENV, REPO_HOST_ARG } from '../contract/instance-environment.js';
import { runKeeper } from './keeper/keeper.js';
import { AGENT_PROCESS_ENV } from './keeper/protocol.js';
import { createAgentLogger } from './log/logger.js';
import { Redactor } from './log/redactor.js';

const SECRET_VARIABLES = [ENV.superuserPassword, ENV.replicationPassword];
const redactor = new Redactor();

/** The container's first process: runs the agent, restarts it if it dies, and guards postgres for it. */
function keeperMain(): Promise<number> {
  for (const name of SECRET_VARIABLES) redactor.add(process.env[name]);
  const log = createAgentLogger(redactor, {
    pod: process.env[ENV.podName] ?? '',
    cluster: process.env[ENV.cluster] ?? '',
    component: 'keeper',
  });
  return runKeeper({ script: fileURLToPath(import.meta.url), secretVariables: SECRET_VARIABLES, log });
}

async function main(): Promise<number> {
  if (process.argv[2] === REPO_HOST_ARG) return (await import('./agent-process.js')).repoHostMain(redactor);
  if (process.env[AGENT_PROCESS_ENV])
    return (await import('./agent-process.js')).instanceMain(redactor, SECRET_VARIABLES);
  return keeperMain();
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Before the logger exists (invalid environment): the message names variables, never values.
    process.stderr.write(`kanri-agent: ${redactor.describe(error)}\n`);
    process.exit(1);
  },
);
