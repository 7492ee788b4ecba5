/** The object shapes the client works with. Generic objects keep every field they arrive with. */

import type { CustomResourceDefinition } from 'kubernetes-types/apiextensions/v1.js';
import type { DaemonSet, Deployment, ReplicaSet, StatefulSet } from 'kubernetes-types/apps/v1.js';
import type { CronJob, Job } from 'kubernetes-types/batch/v1.js';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type {
  ConfigMap,
  Endpoints,
  Namespace,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from 'kubernetes-types/core/v1.js';
import type { EndpointSlice } from 'kubernetes-types/discovery/v1.js';
import type { Event } from 'kubernetes-types/events/v1.js';
import type { ListMeta, ObjectMeta } from 'kubernetes-types/meta/v1.js';
import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import type { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-types/rbac/v1.js';

export type { ListMeta, ObjectMeta };

/** Any Kubernetes object. Fields beyond these are kept as they are, never dropped. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** A list response. */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T extends KubeObject = KubeObject> {
  readonly type: WatchEventType;
  readonly object: T;
}

/** Identifies a kind: `{ apiVersion: 'apps/v1', kind: 'Deployment' }`. */
export interface GroupVersionKind {
  readonly apiVersion: string;
  readonly kind: string;
}

/** Built-in kinds with their types from `kubernetes-types`, so `client.resource('v1', 'ConfigMap')` is typed. */
export interface KnownKinds {
  'v1/ConfigMap': ConfigMap;
  'v1/Secret': Secret;
  'v1/Service': Service;
  'v1/Pod': Pod;
  'v1/Namespace': Namespace;
  'v1/Node': Node;
  'v1/ServiceAccount': ServiceAccount;
  'v1/PersistentVolumeClaim': PersistentVolumeClaim;
  'v1/PersistentVolume': PersistentVolume;
  'v1/Endpoints': Endpoints;
  'apps/v1/Deployment': Deployment;
  'apps/v1/StatefulSet': StatefulSet;
  'apps/v1/ReplicaSet': ReplicaSet;
  'apps/v1/DaemonSet': DaemonSet;
  'batch/v1/Job': Job;
  'batch/v1/CronJob': CronJob;
  'coordination.k8s.io/v1/Lease': Lease;
  'events.k8s.io/v1/Event': Event;
  'discovery.k8s.io/v1/EndpointSlice': EndpointSlice;
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget;
  'rbac.authorization.k8s.io/v1/Role': Role;
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding;
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole;
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding;
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition;
}

/** The object type for an apiVersion and kind: the built-in type when known, else a generic object. */
export type ObjectOf<V extends string, K extends string> = `${V}/${K}` extends keyof KnownKinds
  ? KnownKinds[`${V}/${K}`]
  : KubeObject & Record<string, unknown>;
