/** @kanri/postgres: the PostgresCluster API, its operator and the instance agent. */

export * from './api/postgres-cluster.js';
export * from './contract/index.js';
export { postgresOperator } from './operator/definition.js';
export { postgresController } from './operator/postgres-controller.js';
