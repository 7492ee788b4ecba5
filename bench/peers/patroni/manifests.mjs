// One Patroni cluster on Kubernetes as Patroni's kubernetes/patroni_k8s.yaml lays it out, pure:
// its configuration (bench/failover's, with the Kubernetes DCS in place of etcd) and the objects
// createCluster applies: RBAC for Patroni's DCS, a Secret, the selectorless read-write Service
// whose Endpoints Patroni keeps pointing at the leader, the `-config` headless Service, and the
// StatefulSet. Plus what the cluster's REST API answers means (`/cluster`).
import { patroniConfig } from '../../failover/patroni-config.mjs';
import { PATRONI_DCS, patroniTimings } from '../../failover/patroni-release.mjs';
import { instanceAffinity } from '../placement.mjs';

export const PG_MAJOR = '16';
const HOME = '/home/postgres';
/** The volume's mount; Patroni creates the data directory under it (0700, as initdb wants). */
export const VOLUME_MOUNT = `${HOME}/pgdata`;
export const DATA_DIR = `${VOLUME_MOUNT}/pgroot/data`;
export const PG_BIN = `/usr/lib/postgresql/${PG_MAJOR}/bin`;
export const API_PORT = 8008;
export const PG_PORT = 5432;
/** uid/gid of `postgres` in the image (Dockerfile). */
export const POSTGRES_UID = 26;
/** Labels every object of a cluster carries; Patroni selects its members' Pods by them. */
export const APPLICATION = 'patroni';
/** Patroni's default `scope_label`, which it adds to `labels` itself. */
export const SCOPE_LABEL = 'cluster-name';
/** Patroni 4's default `role_label` and `leader_label_value` (3.x wrote `master`). */
export const ROLE_LABEL = 'role';
export const LEADER_LABEL_VALUE = 'primary';
export const SUPERUSER = 'postgres';
export const REPLICATION_USER = 'replicator';

/** `{ application, cluster-name }`: the labels of the cluster `name`. */
export function clusterLabels(name) {
  return { application: APPLICATION, [SCOPE_LABEL]: name };
}

/** A label selector for `labels`. */
export function selector(labels) {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * Environment variables the kubelet defines before PATRONI_CONFIGURATION, so that it can refer to
 * them as `$(NAME)`: a Pod's name and address are known only when it runs, and the passwords stay
 * in the Secret rather than the StatefulSet. Patroni takes the PATRONI_* ones out of the
 * environment it passes on.
 */
const REF = {
  podName: 'PATRONI_NAME',
  podIP: 'PATRONI_KUBERNETES_POD_IP',
  superuserPassword: 'PATRONI_SUPERUSER_PASSWORD',
  replicationPassword: 'PATRONI_REPLICATION_PASSWORD',
};
const ref = (name) => `$(${name})`;

/**
 * The cluster `name`'s Patroni configuration, for every member alike (per-Pod values are `$(…)`
 * references the kubelet expands). The DCS settings and PostgreSQL's are bench/failover's
 * (patroniConfig), so both benchmarks run one Patroni setup: ttl/loop_wait/retry_timeout as
 * patroniTimings gives Patroni `version` for Kanri's defaults, failsafe_mode on, synchronous mode
 * strict with one standby when `sync`. What differs is where it runs: the Kubernetes DCS in place
 * of etcd, addresses of the Pod, no TLS files (the bench's writer uses plain TCP), and pg_hba open
 * to every address with a password, since kube-proxy masquerades the host's connections and the
 * Pod and node ranges are testenv's to choose.
 *
 * @example
 * patroniConfiguration({ name: 'pg', namespace: 'bench', sync: false, version: '4.1.5' }).kubernetes.use_endpoints; // true
 */
export function patroniConfiguration({ name, namespace, sync, version }) {
  const timings = patroniTimings(PATRONI_DCS, version);
  const base = patroniConfig({
    member: { name: ref(REF.podName), ip: ref(REF.podIP), dir: '/tmp', dataDir: DATA_DIR },
    etcdHost: '',
    pgBin: PG_BIN,
    timings,
    failsafeMode: true,
    // No /dev/watchdog on this machine, and a Pod could not open the host's one anyway.
    watchdogMode: 'off',
    sync,
    credentials: { user: SUPERUSER, password: ref(REF.superuserPassword) },
    replicationPassword: ref(REF.replicationPassword),
  });
  const { etcd3: _etcd, namespace: _dcsPrefix, ...rest } = base;
  return {
    ...rest,
    scope: name,
    restapi: { listen: `0.0.0.0:${API_PORT}`, connect_address: `${ref(REF.podIP)}:${API_PORT}` },
    kubernetes: {
      namespace,
      labels: { application: APPLICATION },
      scope_label: SCOPE_LABEL,
      role_label: ROLE_LABEL,
      leader_label_value: LEADER_LABEL_VALUE,
      // The leader lock in the Endpoints named after the scope, whose address is the leader's: the
      // selectorless Service `name` sends writes there (mirrored into an EndpointSlice).
      use_endpoints: true,
      pod_ip: ref(REF.podIP),
      ports: [{ name: 'postgresql', port: PG_PORT }],
    },
    postgresql: {
      ...rest.postgresql,
      // The Pod's own network namespace: its address and loopback.
      listen: `0.0.0.0:${PG_PORT}`,
      connect_address: `${ref(REF.podIP)}:${PG_PORT}`,
      pgpass: '/tmp/pgpass',
      parameters: { unix_socket_directories: '/tmp' },
      pg_hba: [
        'local all all trust',
        `host replication ${REPLICATION_USER} 0.0.0.0/0 scram-sha-256`,
        'host all all 0.0.0.0/0 scram-sha-256',
      ],
    },
  };
}

/** The Role patroni_k8s.yaml gives Patroni: its DCS objects, its Pods' labels, the `-config` Service. */
function role(name, namespace, labels) {
  const dcs = ['create', 'get', 'list', 'patch', 'update', 'watch', 'delete', 'deletecollection'];
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace, labels },
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: dcs },
      { apiGroups: [''], resources: ['endpoints'], verbs: dcs },
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch', 'update', 'watch'] },
      { apiGroups: [''], resources: ['services'], verbs: ['create'] },
    ],
  };
}

/**
 * Every object of cluster `spec` (bench/peers/system.mjs's ClusterSpec) in the order to create
 * them, StatefulSet last. `passwords`: { superuser, replication }; `nodes`: the nodes instances
 * may run on.
 */
export function clusterObjects({ spec, image, version, passwords, nodes, probePeriodSeconds = 2 }) {
  const { name, namespace } = spec;
  const labels = clusterLabels(name);
  const meta = (n) => ({ name: n, namespace, labels });
  const config = patroniConfiguration({ name, namespace, sync: spec.synchronous, version });
  const secretEnv = (envName, key) => ({ name: envName, valueFrom: { secretKeyRef: { name, key } } });
  const statefulSet = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(name),
    spec: {
      replicas: spec.instances,
      serviceName: name,
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate' },
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: name,
          // Kanri's and CloudNativePG's 30 s (Patroni's example has 0), so that a deleted Pod's
          // Patroni gets the same time as theirs to stop postgres and give up the leader lock;
          // with 0 the API removes the Pod at once while its processes still run, and the
          // StatefulSet's replacement joins beside them.
          terminationGracePeriodSeconds: 30,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: POSTGRES_UID,
            runAsGroup: POSTGRES_UID,
            fsGroup: POSTGRES_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          affinity: instanceAffinity(nodes, labels),
          containers: [
            {
              name: 'patroni',
              image,
              // No registry: the image is imported into every node's containerd when it starts.
              imagePullPolicy: 'IfNotPresent',
              ports: [
                { name: 'postgresql', containerPort: PG_PORT, protocol: 'TCP' },
                { name: 'patroni', containerPort: API_PORT, protocol: 'TCP' },
              ],
              env: [
                { name: REF.podName, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                { name: REF.podIP, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                secretEnv(REF.superuserPassword, 'superuser-password'),
                secretEnv(REF.replicationPassword, 'replication-password'),
                // JSON is YAML, which Patroni parses this as.
                { name: 'PATRONI_CONFIGURATION', value: JSON.stringify(config) },
              ],
              // Patroni's /readiness: 200 for a running leader or a replica streaming from it. Its
              // example probes every 10 s; every loop_wait here, so that the StatefulSet's rolling
              // update moves on when a member is back rather than up to 10 s later.
              readinessProbe: {
                httpGet: { scheme: 'HTTP', path: '/readiness', port: API_PORT },
                initialDelaySeconds: 3,
                periodSeconds: probePeriodSeconds,
                timeoutSeconds: 5,
                successThreshold: 1,
                failureThreshold: 3,
              },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              volumeMounts: [{ name: 'pgdata', mountPath: VOLUME_MOUNT }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'pgdata', labels },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: spec.storage } } },
        },
      ],
    },
  };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(name) },
    role(name, namespace, labels),
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(name),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(name),
      type: 'Opaque',
      stringData: { 'superuser-password': passwords.superuser, 'replication-password': passwords.replication },
    },
    // Read-write: no selector; Patroni writes the leader's address into the Endpoints `name`.
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(name),
      spec: { type: 'ClusterIP', ports: [{ name: 'postgresql', port: PG_PORT, targetPort: PG_PORT }] },
    },
    // Keeps `name-config` (Patroni's cluster configuration) from being cleaned up as an orphan.
    { apiVersion: 'v1', kind: 'Service', metadata: meta(`${name}-config`), spec: { clusterIP: 'None' } },
    statefulSet,
  ];
}

/**
 * What the leader's `GET /cluster` says, condensed: the leader's name, and whether all
 * `instances` members are there with the leader running and every other member streaming
 * from it (Patroni 4's replica state; 3.x said `running`).
 *
 * @example
 * clusterState({ members: [{ name: 'pg-0', role: 'leader', state: 'running' }] }, 1);
 * // { leader: 'pg-0', ready: true, members: ['pg-0 leader running'] }
 */
export function clusterState(body, instances) {
  const members = body?.members ?? [];
  const leaders = members.filter((m) => m.role === 'leader');
  const replicas = members.filter((m) => m.role !== 'leader');
  const ready =
    members.length === instances &&
    leaders.length === 1 &&
    leaders[0].state === 'running' &&
    replicas.every((m) => m.state === 'streaming');
  return {
    leader: leaders.length === 1 ? leaders[0].name : undefined,
    ready,
    members: members.map((m) => `${m.name} ${m.role} ${m.state}`),
  };
}

/** Random enough for a throwaway cluster's passwords; hex so that no character needs quoting. */
export function randomPassword() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}
