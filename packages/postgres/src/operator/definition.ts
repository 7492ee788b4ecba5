/** The PostgreSQL operator as one definition: its CRDs, controllers, derived RBAC and admission policies. */
import { defineOperator } from '@kanri/api';
import { PGUpgradeResource } from '../api/pg-upgrade.js';
import { PostgresBackupResource } from '../api/postgres-backup.js';
import { PostgresClusterResource } from '../api/postgres-cluster.js';
import {
  API_VERSION,
  instanceAdmissionPolicies,
  instanceBackupStatusPolicies,
  KIND,
  LABEL,
  repoHostAdmissionPolicies,
  rulesToGrantInstanceRoles,
  rulesToGrantRepoHostRoles,
} from '../contract/index.js';
import { memberLabelPolicies } from './admission/member-label-policy.js';
import { operatorPodRules } from './admission/operator-pod-rules.js';
import { expectPolicies } from './admission/policy-gate.js';
import { postgresController } from './postgres-controller.js';
import { pgUpgradeController } from './upgrade/pg-upgrade-controller.js';

export const postgresOperator = defineOperator({
  name: 'postgres-operator',
  image: 'ghcr.io/kanri-dev/postgres-operator:0.1.0',
  namespace: 'postgres-operator',
  resources: [PostgresClusterResource, PostgresBackupResource, PGUpgradeResource],
  controllers: [postgresController, pgUpgradeController],
  // The operator grants the instances' and the repo hosts' Roles, so it must hold those
  // permissions itself (RBAC forbids granting more than you have). Holding `bind` or `escalate`
  // instead would let it grant any Role in the cluster, its own included: it holds the verbs, and
  // admission narrows them.
  extraRules: [
    ...rulesToGrantInstanceRoles(),
    ...rulesToGrantRepoHostRoles(),
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['delete'],
      reason: 'an in-place restore or a major upgrade removes the leader Lease once every instance is stopped',
    },
  ],
  clusterRules: [
    {
      apiGroups: [''],
      resources: ['nodes'],
      verbs: ['get'],
      reason:
        "when an instance waits on an image its node cannot get, names the tags of that image's repository the node has (instances/image-availability-actions.ts)",
    },
  ],
  plurals: {
    'policy/PodDisruptionBudget': 'poddisruptionbudgets',
    'networking.k8s.io/NetworkPolicy': 'networkpolicies',
  },
  // Only the Secrets of Kanri's clusters in memory, not every Secret in the cluster (issue 16,
  // finding 7); the few it must read otherwise (a password Secret the cache misses) it gets from
  // the API server (credentials.ts, backups/tls-certificates.ts).
  cache: { byKind: { 'v1/Secret': { labelSelector: LABEL.cluster } } },
  // Its cluster-wide writes narrowed to what it owns: objects labelled with their cluster's name,
  // named after it, in a namespace that holds it; Pods only as the cluster's ServiceAccount and
  // away from the node (issue 37, finding 13).
  ownership: {
    label: LABEL.cluster,
    owner: { apiVersion: API_VERSION, kind: KIND },
    validations: operatorPodRules,
  },
  // What RBAC cannot narrow: each instance writes only its own Pod's role and report, another Pod
  // of its cluster only off primary, and only its cluster's Lease (issue 16, finding 1); only its
  // own cluster's PostgresBackup status (issue 37, finding 7); only the operator puts a cluster's
  // membership labels on a Pod or volume (issue 37). The repo host writes only its own Pod's
  // pgBackRest annotations (issue 37, finding 3).
  admissionPolicies: (install) => [
    ...instanceAdmissionPolicies(),
    ...repoHostAdmissionPolicies(),
    ...instanceBackupStatusPolicies(),
    ...memberLabelPolicies(install.username),
  ],
});

// The controller's admission gate checks that these policies are in force before any instance runs.
expectPolicies((namespace) => postgresOperator.policies({ namespace: namespace ?? postgresOperator.namespace }));

export default postgresOperator;
