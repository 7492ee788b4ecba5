/** The Pod of one instance: the agent container, its data volume and probes. Pure. */
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { type Bootstrap, ENV, LABEL, names, PATH, PORT } from '../../contract/index.js';
import { instanceLabels } from './labels.js';

/** uid and gid of `postgres` in the Kanri image (see packages/postgres/Dockerfile). */
export const POSTGRES_UID = 26;

export function defaultImage(postgresVersion: number): string {
  return `ghcr.io/kanri-dev/postgres:${postgresVersion}`;
}

export interface InstancePodInput {
  readonly cluster: PostgresCluster;
  readonly name: string;
  readonly set: string;
  readonly setIndex: number;
  readonly bootstrap: Bootstrap;
}

export function instancePod({ cluster, name, set, setIndex, bootstrap }: InstancePodInput): Pod {
  const clusterName = cluster.metadata?.name ?? '';
  const spec = cluster.spec;
  const instanceSet = spec.instances[setIndex];
  const secretEnv = (env: string, secret: string) => ({
    name: env,
    valueFrom: { secretKeyRef: { name: secret, key: 'password' } },
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: cluster.metadata?.namespace,
      labels: instanceLabels(clusterName, set, name),
    },
    spec: {
      serviceAccountName: names.instanceServiceAccount(clusterName),
      hostname: name,
      subdomain: names.podsService(clusterName),
      // Fast shutdown takes seconds; a long grace period only delays failover of a stuck Pod.
      terminationGracePeriodSeconds: 30,
      enableServiceLinks: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: POSTGRES_UID,
        runAsGroup: POSTGRES_UID,
        fsGroup: POSTGRES_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'postgres',
          image: spec.image ?? defaultImage(spec.postgresVersion),
          env: [
            { name: ENV.cluster, value: clusterName },
            { name: ENV.podName, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: ENV.namespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: ENV.podIP, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            { name: ENV.bootstrap, value: bootstrap },
            { name: ENV.postgresVersion, value: String(spec.postgresVersion) },
            secretEnv(ENV.superuserPassword, names.superuserSecret(clusterName)),
            secretEnv(ENV.replicationPassword, names.replicationSecret(clusterName)),
          ],
          ports: [
            { name: 'postgres', containerPort: PORT.postgres },
            { name: 'agent', containerPort: PORT.agent },
          ],
          // The agent answers from state it holds, so probing every second costs nothing, and a
          // new primary (or a new replica) joins its Service within a second of being able to serve.
          readinessProbe: {
            httpGet: { path: '/readyz', port: PORT.agent },
            periodSeconds: 1,
            failureThreshold: 3,
          },
          // Healthy during a long base backup too: the agent answers /healthz while it works.
          livenessProbe: {
            httpGet: { path: '/healthz', port: PORT.agent },
            periodSeconds: 10,
            failureThreshold: 6,
          },
          ...(instanceSet?.resources ? { resources: instanceSet.resources } : {}),
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [
            { name: 'pgdata', mountPath: PATH.data },
            { name: 'run', mountPath: PATH.run },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        },
      ],
      volumes: [
        { name: 'pgdata', persistentVolumeClaim: { claimName: names.pvc(name) } },
        { name: 'run', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
      ],
      affinity: instanceSet?.affinity ?? {
        // Spread instances over nodes when possible: losing a node must not take primary and replica.
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: {
                topologyKey: 'kubernetes.io/hostname',
                labelSelector: { matchLabels: { [LABEL.cluster]: clusterName } },
              },
            },
          ],
        },
      },
      ...(instanceSet?.tolerations ? { tolerations: instanceSet.tolerations } : {}),
    },
  } as Pod;
}
