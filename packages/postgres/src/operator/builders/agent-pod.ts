/**
 * What every Pod running the agent image shares (an instance, the repo host): how it runs (non-root
 * as the image's postgres user, no privileges, read-only root), its identity from the downward API,
 * and its probes on the agent's port. Pure.
 */
import type { Container, PodSecurityContext } from 'kubernetes-types/core/v1.js';
import { ENV, PORT } from '../../contract/index.js';

/** uid and gid of `postgres` in the Kanri image (see packages/postgres/Dockerfile). */
export const POSTGRES_UID = 26;

export const AGENT_POD_SECURITY: PodSecurityContext = {
  runAsNonRoot: true,
  runAsUser: POSTGRES_UID,
  runAsGroup: POSTGRES_UID,
  fsGroup: POSTGRES_UID,
  seccompProfile: { type: 'RuntimeDefault' },
};

/** The Pod security context of a cluster's Pods: AGENT_POD_SECURITY with the spec's supplemental groups. */
export function agentPodSecurity(supplementalGroups: readonly number[] | undefined): PodSecurityContext {
  return supplementalGroups?.length
    ? { ...AGENT_POD_SECURITY, supplementalGroups: [...supplementalGroups] }
    : AGENT_POD_SECURITY;
}

export const AGENT_CONTAINER_SECURITY: Container['securityContext'] = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

/** The Pod's identity as the agent reads it (contract ENV): cluster, name, namespace and IP. */
export function identityEnv(cluster: string): NonNullable<Container['env']> {
  return [
    { name: ENV.cluster, value: cluster },
    { name: ENV.podName, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: ENV.namespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: ENV.podIP, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  ];
}

/**
 * The agent answers its probes from state it holds, so probing every second costs nothing, and a
 * Pod joins its Service within a second of being able to serve. Liveness holds through long work
 * (a base backup): the agent answers /healthz while it works.
 */
export const AGENT_PROBES: Pick<Container, 'readinessProbe' | 'livenessProbe'> = {
  readinessProbe: { httpGet: { path: '/readyz', port: PORT.agent }, periodSeconds: 1, failureThreshold: 3 },
  livenessProbe: { httpGet: { path: '/healthz', port: PORT.agent }, periodSeconds: 10, failureThreshold: 6 },
};
