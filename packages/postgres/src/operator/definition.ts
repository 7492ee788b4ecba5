/** The PostgreSQL operator as one definition: its CRDs, controllers and derived RBAC. */
import { defineOperator } from '@kanri/api';
import { PGUpgradeResource } from '../api/pg-upgrade.js';
import { PostgresBackupResource } from '../api/postgres-backup.js';
import { PostgresClusterResource } from '../api/postgres-cluster.js';
import {
  instanceAdmissionPolicies,
  instanceBackupStatusPolicies,
  LABEL,
  rulesToGrantInstanceRoles,
} from '../contract/index.js';
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
  plurals: {
    'policy/PodDisruptionBudget': 'poddisruptionbudgets',
    'networking.k8s.io/NetworkPolicy': 'networkpolicies',
  },
  // Only the Secrets of Kanri's clusters in memory, not every Secret in the cluster (issue 16,
  // finding 7); the few it must read otherwise (a password Secret the cache misses) it gets from
  // the API server (credentials.ts, backups/tls-certificates.ts).
  cache: { byKind: { 'v1/Secret': { labelSelector: LABEL.cluster } } },
  // What RBAC cannot narrow: each instance writes only its own Pod's role and report, another Pod
  // of its cluster only off primary, and only its cluster's Lease (issue 16, finding 1); only its
  // own cluster's PostgresBackup status (issue 37, finding 7).
  admissionPolicies: [...instanceAdmissionPolicies(), ...instanceBackupStatusPolicies()],
});

export default postgresOperator;
