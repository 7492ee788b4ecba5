/** @kanri/postgres: the PostgresCluster API, its operator and the instance agent. */

export * from './api/backup-options.js';
export * from './api/command-options.js';
export * from './api/major-upgrade-status.js';
export * from './api/pg-upgrade.js';
export * from './api/pgo-field-table.js';
export * from './api/pgo-fields.js';
export * from './api/postgres-backup.js';
export * from './api/postgres-cluster.js';
export * from './contract/index.js';
export { postgresOperator } from './operator/definition.js';
export { postgresController } from './operator/postgres-controller.js';
