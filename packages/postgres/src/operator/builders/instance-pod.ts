/** The Pod of one instance: the agent container, its data volume and probes. Pure. */
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  type Bootstrap,
  CREDENTIAL_FILE,
  ENV,
  LABEL,
  names,
  PATH,
  PGBACKREST_CONF_DIR,
  PGBACKREST_SOURCE_CONF_DIR,
  PORT,
} from '../../contract/index.js';
import { AGENT_CONTAINER_SECURITY, AGENT_PROBES, agentPodSecurity, identityEnv } from './agent-pod.js';
import { instanceLabels } from './labels.js';

export function defaultImage(postgresVersion: number): string {
  return `ghcr.io/kanri-dev/postgres:${postgresVersion}`;
}

export interface InstancePodInput {
  readonly cluster: PostgresCluster;
  readonly name: string;
  readonly set: string;
  readonly setIndex: number;
  readonly bootstrap: Bootstrap;
  /** With bootstrap `restore`: the restore's id (ENV.restoreId). */
  readonly restoreId?: string;
  /** With a clone: the source repo's `configuration`, mounted at PGBACKREST_SOURCE_CONF_DIR. */
  readonly sourceConfiguration?: readonly unknown[];
  /**
   * The major whose default image to run, when not `spec.postgresVersion`: until a major upgrade
   * starts, instances keep the major their data is of (operator/upgrade).
   */
  readonly imageMajor?: number;
  /** The Pod a major upgrade creates: the major its data is of (ENV.majorUpgradeFrom). */
  readonly majorUpgradeFrom?: number;
}

export function instancePod(input: InstancePodInput): Pod {
  const { cluster, name, set, setIndex, bootstrap } = input;
  const clusterName = cluster.metadata?.name ?? '';
  const spec = cluster.spec;
  const instanceSet = spec.instances[setIndex];
  // PGO's layout: the repo credentials (an `s3.conf` holding repoN-s3-key…) are pgBackRest
  // configuration files in conf.d, which the agent's commands include.
  const backupSources = spec.backups?.pgbackrest?.configuration ?? [];
  const sourceSources = input.sourceConfiguration ?? [];
  const backupVolumes = [
    ...(backupSources.length > 0 ? [{ name: 'pgbackrest-config', projected: { sources: backupSources } }] : []),
    ...(sourceSources.length > 0 ? [{ name: 'pgbackrest-source', projected: { sources: sourceSources } }] : []),
  ];
  const backupMounts = backupVolumes.map((v) => ({
    name: v.name,
    mountPath: v.name === 'pgbackrest-config' ? PGBACKREST_CONF_DIR : PGBACKREST_SOURCE_CONF_DIR,
    readOnly: true,
  }));
  // Files, not environment variables: /proc/<pid>/environ would show them to the postgres user.
  const credentials = {
    name: 'credentials',
    projected: {
      defaultMode: 0o440,
      sources: [
        [names.superuserSecret(clusterName), CREDENTIAL_FILE.superuser],
        [names.replicationSecret(clusterName), CREDENTIAL_FILE.replication],
      ].map(([name, path]) => ({ secret: { name, items: [{ key: 'password', path }] } })),
    },
  };
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
      // The pause container becomes PID 1 and reaps orphans: the agent's first process is Node, which
      // waits only for its own children, so a detached tool (pgBackRest's async archive-push) that
      // ends would stay a zombie.
      shareProcessNamespace: true,
      securityContext: agentPodSecurity(spec.supplementalGroups),
      containers: [
        {
          name: 'postgres',
          image: spec.image ?? defaultImage(input.imageMajor ?? spec.postgresVersion),
          ...(spec.imagePullPolicy ? { imagePullPolicy: spec.imagePullPolicy } : {}),
          env: [
            ...identityEnv(clusterName),
            { name: ENV.bootstrap, value: bootstrap },
            ...(input.restoreId ? [{ name: ENV.restoreId, value: input.restoreId }] : []),
            ...(input.majorUpgradeFrom ? [{ name: ENV.majorUpgradeFrom, value: String(input.majorUpgradeFrom) }] : []),
          ],
          ports: [
            { name: 'postgres', containerPort: PORT.postgres },
            { name: 'agent', containerPort: PORT.agent },
            { name: 'peer', containerPort: PORT.peer },
          ],
          ...AGENT_PROBES,
          ...(instanceSet?.resources ? { resources: instanceSet.resources } : {}),
          securityContext: AGENT_CONTAINER_SECURITY,
          volumeMounts: [
            { name: 'pgdata', mountPath: PATH.data },
            { name: 'run', mountPath: PATH.run },
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'credentials', mountPath: PATH.credentials, readOnly: true },
            ...backupMounts,
          ],
        },
      ],
      volumes: [
        { name: 'pgdata', persistentVolumeClaim: { claimName: names.pvc(name) } },
        { name: 'run', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
        credentials,
        ...backupVolumes,
      ],
      ...affinityOf(instanceSet?.affinity, spec.disableDefaultPodScheduling, clusterName),
      ...(instanceSet?.tolerations ? { tolerations: instanceSet.tolerations } : {}),
      ...(instanceSet?.topologySpreadConstraints
        ? { topologySpreadConstraints: instanceSet.topologySpreadConstraints }
        : {}),
      ...(instanceSet?.priorityClassName ? { priorityClassName: instanceSet.priorityClassName } : {}),
      ...(spec.imagePullSecrets ? { imagePullSecrets: spec.imagePullSecrets } : {}),
    },
  } as Pod;
}

/** An instance set's affinity, else the default one unless the spec turns it off. */
function affinityOf(
  affinity: Record<string, unknown> | undefined,
  noDefault: boolean | undefined,
  clusterName: string,
): { affinity?: Record<string, unknown> } {
  if (affinity) return { affinity };
  if (noDefault) return {};
  return {
    affinity: {
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
  };
}
