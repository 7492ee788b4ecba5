// The contract between `npm run bench:peers` (scripts/bench-peers.mjs) and each system it runs
// side by side on the same real nodes: Kanri, CloudNativePG and Patroni 4 (on Kubernetes, its
// Kubernetes DCS). The driver owns the control plane, the nodes, the client and the faults; a
// system only knows how to build, install and drive its own clusters, so every row measures the
// three through one code path.

/**
 * Names of the systems, in the JSON's per-row objects.
 * @typedef {'kanri' | 'cloudnative-pg' | 'patroni'} SystemName
 */

/**
 * What a system gets once the control plane runs.
 * @typedef {object} PeerEnv
 * @property {import('@kanri/testenv').ControlPlane} cp  the control plane, with `cp.realNodes`
 * @property {import('@kanri/client').KubeClient} client  an admin client
 * @property {(...args: string[]) => Promise<string>} kubectl  runs kubectl against the control plane; its stdout
 * @property {readonly string[]} instanceNodes  nodes instances may run on (real-node-0 is the host's gateway to Services and is cordoned)
 * @property {PeerS3 | undefined} s3  the S3 server, reachable from Pods (row 6); undefined when the run has no backup row
 * @property {(message: string) => void} log  progress lines (stderr)
 */

/**
 * testenv's S3 server (versitygw over TLS) on the real nodes' bridge address, and the bucket
 * every system keeps its backups in, each under a prefix of its own.
 * @typedef {object} PeerS3
 * @property {string} endpoint  `https://<bridge address>:<port>`
 * @property {string} host  the bridge address
 * @property {number} port
 * @property {string} region
 * @property {string} accessKeyId
 * @property {string} secretAccessKey
 * @property {string} caPem  the CA the server's certificate chains to
 * @property {string} bucket
 */

/**
 * One cluster to create. Every system gets the same.
 * @typedef {object} ClusterSpec
 * @property {string} name
 * @property {string} namespace  created by the driver before `createCluster`
 * @property {number} instances  3 unless a row says otherwise
 * @property {boolean} synchronous  one synchronous standby (quorum 1) when true, asynchronous otherwise
 * @property {string} storage  each instance's data volume, e.g. `1Gi`
 * @property {boolean} [backups]  archive WAL to `env.s3` and take backups there when asked (row 6)
 * @property {string} [restoreFrom]  bootstrap from the latest backup (and then the archive) of
 *   this cluster, in the same namespace, instead of an empty database (row 6)
 */

/**
 * Where the client writes: the system's read-write Service, reachable from the host through
 * real-node-0's kube-proxy. Plain TCP with password authentication as the superuser or an owner
 * of `database`, so that the driver's writer treats every system alike.
 * @typedef {object} WriteTarget
 * @property {string} address  `ip:port` of the read-write Service
 * @property {string} user
 * @property {string} password
 * @property {string} database
 */

/**
 * @typedef {object} PeerCluster
 * @property {(timeoutMs: number) => Promise<void>} waitReady  every instance up and replicating, the read-write Service answering writes
 * @property {() => Promise<WriteTarget>} writeTarget
 * @property {() => Promise<{ pod: string, node: string }>} primary  the current primary as the system says it (its API objects), with its node
 * @property {() => Promise<void>} switchover  asks for a planned switchover to a healthy replica; returns once asked
 * @property {() => Promise<{ from: string, to: string }>} rollImage  starts a rolling update from the image the
 *   instances run to the other of `prepare`'s two tags (so every trial rolls, whichever ran last); returns once asked
 * @property {(timeoutMs: number) => Promise<void>} waitRolled  every instance runs the image `rollImage` rolled to and is ready again
 * @property {() => Promise<string[]>} instancePods  the names of the cluster's instance Pods
 * @property {() => Promise<void>} delete  removes the cluster and its volumes
 * @property {(name: string) => Promise<{ systemMs: number | null }>} [backup]  asks for a full
 *   backup named `name` of a cluster created with `backups`; resolves once the system reports it
 *   complete, with the duration the system itself recorded (throws if it failed)
 */

/**
 * @typedef {object} PeerSystem
 * @property {SystemName} name
 * @property {(context: { log: (message: string) => void }) => Promise<{ imageArchives: string[] }>} prepare
 *   builds (cached, from cold when needed) every binary and image the system runs, before the
 *   control plane starts: real nodes import image archives when they start. Two image tags for
 *   the instances, so that `rollImage` has somewhere to roll to.
 * @property {(env: PeerEnv) => Promise<void>} install  CRDs, RBAC and the operator (if any), waiting until it runs
 * @property {(env: PeerEnv, spec: ClusterSpec) => Promise<PeerCluster>} createCluster
 * @property {(env: PeerEnv) => Promise<string[]>} operatorPods  `namespace/name` of the operator's Pods (memory row); empty for none
 * @property {(spec: ClusterSpec) => string} [backupPrefix]  where in `env.s3`'s bucket the backups and WAL of a cluster created with `backups` go
 * @property {string} [backupsUnsupported]  why the system takes no part in the backup row, when it has no backups of its own
 */

export {};
