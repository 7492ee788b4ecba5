/** The PostgreSQL operator as one definition: its CRDs, controllers and derived RBAC. */
import { defineOperator } from '@kanri/api';
import { PGUpgradeResource } from '../api/pg-upgrade.js';
import { PostgresBackupResource } from '../api/postgres-backup.js';
import { PostgresClusterResource } from '../api/postgres-cluster.js';
import { rulesToGrantInstanceRoles } from '../contract/index.js';
import { postgresController } from './postgres-controller.js';
import { pgUpgradeController } from './upgrade/pg-upgrade-controller.js';

export const postgresOperator = defineOperator({
  name: 'postgres-operator',
  image: 'ghcr.io/kanri-dev/postgres-operator:0.1.0',
  namespace: 'postgres-operator',
  resources: [PostgresClusterResource, PostgresBackupResource, PGUpgradeResource],
  controllers: [postgresController, pgUpgradeController],
  // The operator grants the instances' Role, so it must hold those permissions itself
  // (RBAC forbids granting more than you have).
  extraRules: [
    ...rulesToGrantInstanceRoles(),
    // An in-place restore removes the leader Lease once every instance is stopped.
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['delete'] },
  ],
  plurals: { 'policy/PodDisruptionBudget': 'poddisruptionbudgets' },
});

export default postgresOperator;
