#!/usr/bin/env node
/** Entry point of the operator image: runs the PostgresCluster controller until SIGTERM. */
import { postgresOperator } from './definition.js';

const manager = await postgresOperator.manager({
  ...(process.env.METRICS_BIND_ADDRESS ? { bindAddress: process.env.METRICS_BIND_ADDRESS } : {}),
});
await manager.start();
