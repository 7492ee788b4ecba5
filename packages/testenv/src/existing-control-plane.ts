/** The `ControlPlane` of an existing cluster (`KANRI_USE_EXISTING_CLUSTER`), and the S3 server either kind may start. */
import type { ControlPlane, ControlPlaneOptions } from './control-plane-types.js';
import { UnsupportedError } from './errors.js';
import { addUserUnsupported, loadExistingCluster } from './existing-cluster.js';
import { type S3Server, startS3Server } from './s3/s3-server.js';

/** The S3 server of `options.s3`. Not under the data directory: that one is private (0700), and the CA file must not be. */
export function startS3(options: ControlPlaneOptions, address?: string): Promise<S3Server | undefined> {
  if (!options.s3) return Promise.resolve(undefined);
  return startS3Server({
    address,
    baseDir: options.baseDir,
    timeoutMs: options.startTimeoutMs,
    ...(options.s3 === true ? {} : options.s3),
  });
}

/** Connects to the cluster in `KUBECONFIG`; `stop()` leaves it alone and only stops the S3 server. */
export async function connectExistingCluster(options: ControlPlaneOptions): Promise<ControlPlane> {
  const existing = await loadExistingCluster();
  const s3 = await startS3(options);
  const stop = async () => {
    await s3?.close();
  };
  const unsupported = async () => {
    throw new UnsupportedError(
      'an existing cluster (KANRI_USE_EXISTING_CLUSTER) has no components testenv can kill or start',
    );
  };
  return {
    ...existing,
    dataDir: undefined,
    etcdUrl: undefined,
    killComponent: unsupported,
    startComponent: unsupported,
    processes: [],
    ports: [],
    binaries: {},
    nodeNames: [],
    processNodeNames: [],
    processNodes: [],
    realNodes: [],
    realNodeNetwork: undefined,
    addUser: async () => addUserUnsupported(),
    s3,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
