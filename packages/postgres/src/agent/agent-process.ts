/**
 * The instance agent's and the repo host's processes (main.ts starts the one its arguments name):
 * each serves its probes and metrics and runs until SIGTERM or SIGINT.
 */
import { accessSync, constants } from 'node:fs';
import { KubeClient } from '@kanri/client';
import { Registry } from 'prom-client';
import { PORT } from '../contract/index.js';
import { loadAgentConfig } from './config.js';
import { InstanceAgent } from './instance-agent.js';
import { createAgentLogger, type Logger } from './log/logger.js';
import type { Redactor } from './log/redactor.js';
import { type HealthSource, startHttpServer } from './peers/http-server.js';
import { checkPgBin } from './postgres/pg-bin.js';
import { applySessionOptionsToTools } from './postgres/session-options.js';
import { RepoHost } from './repo-host/repo-host.js';
import { loadRepoHostConfig } from './repo-host/repo-host-config.js';
import { AgentMetrics } from './reporting/metrics.js';

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

/** The instance agent's process, started by the keeper. */
export async function instanceMain(redactor: Redactor, secretVariables: readonly string[]): Promise<number> {
  for (const name of secretVariables) redactor.add(process.env[name]);
  const config = loadAgentConfig(process.env);
  // In a Pod they come from files (PATH.credentials), so only the config knows them.
  redactor.add(config.superuserPassword);
  redactor.add(config.replicationPassword);
  // The tools inherit the environment: the secrets stay in the agent only (the keeper strips them
  // from postgres's).
  for (const name of secretVariables) delete process.env[name];
  applySessionOptionsToTools();
  const log = createAgentLogger(redactor, { pod: config.podName, cluster: config.cluster });
  const pgBin = checkPgBin(config.pgBin);
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

/** The repo host's process (the image run with REPO_HOST_ARG). */
export async function repoHostMain(redactor: Redactor): Promise<number> {
  const config = loadRepoHostConfig(process.env);
  const log = createAgentLogger(redactor, { pod: config.podName, cluster: config.cluster });
  const client = await KubeClient.load();
  const host = new RepoHost({ config, client, log, redactor });
  log.info({ podIP: config.podIP }, 'repo host started');
  return serve(host, config.podIP, new Registry(), client, log);
}
