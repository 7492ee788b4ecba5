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
 * @property {{ endpoint: string, region: string, accessKeyId: string, secretAccessKey: string, bucket: string } | undefined} s3
 *   the S3 server, reachable from Pods (row 6); undefined when the run has no backup row
 * @property {(message: string) => void} log  progress lines (stderr)
 */

/**
 * One cluster to create. Every system gets the same.
 * @typedef {object} ClusterSpec
 * @property {string} name
 * @property {string} namespace  created by the driver before `createCluster`
 * @property {number} instances  3 unless a row says otherwise
 * @property {boolean} synchronous  one synchronous standby (quorum 1) when true, asynchronous otherwise
 * @property {string} storage  each instance's data volume, e.g. `1Gi`
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
 * @property {() => Promise<void>} rollImage  starts a rolling update to the system's alternate image (`prepare`'s second tag); returns once asked
 * @property {(timeoutMs: number) => Promise<void>} waitRolled  every instance runs the alternate image and is ready again
 * @property {() => Promise<string[]>} instancePods  the names of the cluster's instance Pods
 * @property {() => Promise<void>} delete  removes the cluster and its volumes
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
 */

export {};
