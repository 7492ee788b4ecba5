#!/usr/bin/env node
/**
 * The agent image's entrypoint. With no argument it is the keeper (keeper/keeper.ts), the main
 * process of every Postgres Pod, which runs this same script again as the instance agent (marked by
 * AGENT_PROCESS_ENV) and runs postgres for it, as its watchdog. The instance agent reads its
 * environment (see ENV in the contract), serves /healthz, /readyz and /metrics on POD_IP:8000,
 * runs postgres through the keeper, and on SIGTERM (passed on by the keeper) stops postgres (fast),
 * releases the Lease if it held it, and exits 0. With the argument `repo-host` it is the cluster's
 * repo host (contract/repo-host.ts), which serves the volume repos and runs the backups.
 */
import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '@kanri/client';
import { Registry } from 'prom-client';
import { ENV, PORT, REPO_HOST_ARG } from '../contract/index.js';
import { loadAgentConfig } from './config.js';
import { InstanceAgent } from './instance-agent.js';
import { type HealthSource, startHttpServer } from './io/http-server.js';
import { createAgentLogger, type Logger } from './io/logger.js';
import { AgentMetrics } from './io/metrics.js';
import { findPgBin } from './io/pg-bin.js';
import { Redactor } from './io/redactor.js';
import { applySessionOptionsToTools } from './io/session-options.js';
import { runKeeper } from './keeper/keeper.js';
import { AGENT_PROCESS_ENV } from './keeper/protocol.js';
import { RepoHost } from './repo-host/repo-host.js';
import { loadRepoHostConfig } from './repo-host/repo-host-config.js';

const SECRET_VARIABLES = [ENV.superuserPassword, ENV.replicationPassword];
const redactor = new Redactor();

interface Runnable extends HealthSource {
  run(signal: AbortSignal): Promise<void>;
  beginShutdown?(): void;
}

/** Serves the probes, runs `agent` until SIGTERM or SIGINT, and resolves the exit code. */
async function serve(
  agent: Runnable,
  podIP: string,
  registry: Registry,
  client: KubeClient,
  log: Logger,
): Promise<number> {
  const server = await startHttpServer(podIP, PORT.agent, agent, registry);
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) return;
    log.info({ signal }, 'stopping');
    agent.beginShutdown?.();
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let code = 0;
  try {
    await agent.run(stop.signal);
  } catch (error) {
    log.fatal({ err: error }, 'the agent failed');
    code = 1;
  }
  server.close();
  server.closeAllConnections();
  await client.close().catch(() => undefined);
  log.info({ code }, 'agent stopped');
  return code;
}

async function instanceMain(): Promise<number> {
  for (const name of SECRET_VARIABLES) redactor.add(process.env[name]);
  const config = loadAgentConfig(process.env);
  // In a Pod they come from files (PATH.credentials), so only the config knows them.
  redactor.add(config.superuserPassword);
  redactor.add(config.replicationPassword);
  // The tools inherit the environment: the secrets stay in the agent only (the keeper strips them
  // from postgres's).
  for (const name of SECRET_VARIABLES) delete process.env[name];
  applySessionOptionsToTools();
  const log = createAgentLogger(redactor, { pod: config.podName, cluster: config.cluster });
  const pgBin = findPgBin(config.pgBin);
  const client = await KubeClient.load();
  const metrics = new AgentMetrics();
  const agent = new InstanceAgent({ config, pgBin, client, log, redactor, metrics });
  log.info(
    { podIP: config.podIP, pgdata: config.pgdata, socketDir: config.socketDir, bootstrap: config.bootstrap, pgBin },
    'agent started',
  );
  // postgres runs the archive command with this Node.js as this user: say so now if it cannot.
  try {
    accessSync(process.execPath, constants.X_OK);
  } catch {
    log.error(
      { node: process.execPath },
      'this user cannot run Node.js from here: the archive command (pgbackrest-archive-push.js) will fail; install Node.js where the postgres user can run it',
    );
  }
  return serve(agent, config.podIP, metrics.registry, client, log);
}

async function repoHostMain(): Promise<number> {
  const config = loadRepoHostConfig(process.env);
  const log = createAgentLogger(redactor, { pod: config.podName, cluster: config.cluster });
  const client = await KubeClient.load();
  const host = new RepoHost({ config, client, log, redactor });
  log.info({ podIP: config.podIP }, 'repo host started');
  return serve(host, config.podIP, new Registry(), client, log);
}

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

function main(): Promise<number> {
  if (process.argv[2] === REPO_HOST_ARG) return repoHostMain();
  return process.env[AGENT_PROCESS_ENV] ? instanceMain() : keeperMain();
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Before the logger exists (invalid environment): the message names variables, never values.
    process.stderr.write(`kanri-agent: ${redactor.describe(error)}\n`);
    process.exit(1);
  },
);
