#!/usr/bin/env node
/**
 * Entry point of the operator image: runs the PostgresCluster controller until SIGTERM. Leader
 * election, the health address and the CRD deletion guard follow the generated Deployment's
 * environment (POD_NAMESPACE, KANRI_LEADER_ELECTION, KANRI_BIND_ADDRESS).
 */
import { postgresOperator } from './definition.js';

const manager = await postgresOperator.manager();
await manager.start();
