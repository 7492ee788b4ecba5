/** @kanri/postgres: the PostgresCluster API, its operator and the instance agent. */
export * from './contract.js';
