/**
 * The repo host (contract/repo-host.ts): one Pod per cluster that mounts each volume repo's PVC
 * and serves it over pgBackRest's TLS server, and those PVCs. Pure.
 *
 * The Pod carries the cluster's labels but no instance label: the controller counts Pods and
 * PVCs labelled with an instance as instances, and the repo host is none.
 */
import { createHash } from 'node:crypto';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  buildRepoHostRoleRules,
  GROUP,
  names,
  PATH,
  PGBACKREST_CLONE_PORT,
  PGBACKREST_CONF_DIR,
  PGBACKREST_SERVER_PORT,
  PORT,
  REPO_HOST_ARG,
  REPO_HOST_LABEL,
  repoVolumePath,
} from '../../contract/index.js';
import { AGENT_CONTAINER_SECURITY, AGENT_PROBES, agentPodSecurity, identityEnv } from './agent-pod.js';
import { defaultImage } from './instance-pod.js';
import { clusterLabels } from './labels.js';

/**
 * Annotation on the repo host Pod: a digest of the spec it was built from. A Pod's volumes and
 * image are immutable, so a Pod whose digest differs from the spec's (a volume repo added or
 * removed, new `configuration`, a new image) is replaced.
 */
export const REPO_HOST_SPEC_ANNOTATION = `${GROUP}/repo-host-spec`;

/** Labels of the repo host Pod and of its repo volumes. */
export function repoHostLabels(cluster: string): Record<string, string> {
  return { ...clusterLabels(cluster), [REPO_HOST_LABEL]: 'true' };
}

/** The volume repos of the spec, in declaration order. */
export function volumeRepos(cluster: PostgresCluster) {
  return (cluster.spec.backups?.pgbackrest?.repos ?? []).flatMap((repo) =>
    repo.volume ? [{ name: repo.name, volumeClaimSpec: repo.volume.volumeClaimSpec }] : [],
  );
}

/** Pod volume name of a volume repo: `repo1` → `pgbackrest-repo1`. */
const repoVolumeName = (repo: string) => `pgbackrest-${repo}`;

/**
 * The PVC of each volume repo (`<cluster>-<repo>`), owned by the cluster: it holds the backups,
 * so it outlives the repo host Pod and goes only with the cluster.
 *
 * @example
 * ```ts
 * repoVolumeClaims(cluster).map((c) => c.metadata?.name); // ['hippo-repo1']
 * ```
 */
export function repoVolumeClaims(cluster: PostgresCluster): PersistentVolumeClaim[] {
  const clusterName = cluster.metadata?.name ?? '';
  return volumeRepos(cluster).map(
    (repo) =>
      ({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: names.repoVolume(clusterName, repo.name),
          namespace: cluster.metadata?.namespace,
          labels: repoHostLabels(clusterName),
        },
        spec: { ...repo.volumeClaimSpec },
      }) as PersistentVolumeClaim,
  );
}

/**
 * The repo host's ServiceAccount, Role and RoleBinding (contract/repo-host-rbac.ts): no Secret,
 * and only its own Pod to write.
 *
 * @example
 * ```ts
 * for (const object of repoHostRbac(cluster)) await ctx.apply(object as KubeObject);
 * ```
 */
export function repoHostRbac(cluster: PostgresCluster): Record<string, unknown>[] {
  const clusterName = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const name = names.repoHostServiceAccount(clusterName);
  const metadata = { name, namespace, labels: repoHostLabels(clusterName) };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata, rules: buildRepoHostRoleRules(clusterName) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ];
}

/**
 * The repo host Pod: the instance image started as repo host, no database and no passwords; the
 * repo credentials of the cloud repos come from `configuration`, since the repo host takes the
 * backups into every repo.
 *
 * @example
 * ```ts
 * repoHostPod(cluster).metadata?.name; // 'hippo-repo-host'
 * ```
 */
export function repoHostPod(cluster: PostgresCluster): Pod {
  const clusterName = cluster.metadata?.name ?? '';
  const spec = cluster.spec;
  const name = names.repoHost(clusterName);
  const repos = volumeRepos(cluster);
  const configuration = spec.backups?.pgbackrest?.configuration ?? [];
  const configVolumes =
    configuration.length > 0 ? [{ name: 'pgbackrest-config', projected: { sources: configuration } }] : [];
  const podSpec = {
    // Its own account: the instances' may read PostgreSQL's keys and the users' passwords.
    serviceAccountName: names.repoHostServiceAccount(clusterName),
    hostname: name,
    terminationGracePeriodSeconds: 30,
    enableServiceLinks: false,
    // The pause container becomes PID 1 and reaps orphans: the agent's first process is Node, which
    // waits only for its own children, so a detached tool (pgBackRest's async archive-push) that
    // ends would stay a zombie.
    shareProcessNamespace: true,
    securityContext: agentPodSecurity(spec.supplementalGroups),
    containers: [
      {
        name: 'pgbackrest',
        image: spec.image ?? defaultImage(spec.postgresVersion),
        ...(spec.imagePullPolicy ? { imagePullPolicy: spec.imagePullPolicy } : {}),
        args: [REPO_HOST_ARG],
        env: identityEnv(clusterName),
        ports: [
          { name: 'agent', containerPort: PORT.agent },
          { name: 'pgbackrest', containerPort: PGBACKREST_SERVER_PORT },
          // Read-only access for clones (contract/clone-gateway.ts).
          { name: 'clone', containerPort: PGBACKREST_CLONE_PORT },
        ],
        ...AGENT_PROBES,
        securityContext: AGENT_CONTAINER_SECURITY,
        volumeMounts: [
          ...repos.map((repo) => ({ name: repoVolumeName(repo.name), mountPath: repoVolumePath(repo.name) })),
          { name: 'run', mountPath: PATH.run },
          { name: 'tmp', mountPath: '/tmp' },
          ...configVolumes.map((v) => ({ name: v.name, mountPath: PGBACKREST_CONF_DIR, readOnly: true })),
        ],
      },
    ],
    volumes: [
      ...repos.map((repo) => ({
        name: repoVolumeName(repo.name),
        persistentVolumeClaim: { claimName: names.repoVolume(clusterName, repo.name) },
      })),
      { name: 'run', emptyDir: {} },
      { name: 'tmp', emptyDir: {} },
      ...configVolumes,
    ],
    ...(spec.imagePullSecrets ? { imagePullSecrets: spec.imagePullSecrets } : {}),
  } as Pod['spec'];
  const digest = createHash('sha256').update(JSON.stringify(podSpec)).digest('hex').slice(0, 16);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: cluster.metadata?.namespace,
      labels: repoHostLabels(clusterName),
      annotations: { [REPO_HOST_SPEC_ANNOTATION]: digest },
    },
    spec: podSpec,
  };
}
