/**
 * @kanri/testenv: a real local Kubernetes control plane, built from pinned Go modules and
 * cached per version, for integration tests and `kanri dev`.
 *
 * @example
 * ```ts
 * import { startControlPlane } from '@kanri/testenv';
 *
 * await using cp = await startControlPlane({ controllers: true, nodes: 2 });
 * console.log(cp.server, cp.kubeconfigPath);
 * ```
 */

export type { BuildPhase, BuildProgress, ProgressListener } from './binaries/build-progress.js';
export { formatProgress, streamProgressReporter } from './binaries/build-progress.js';
export { cacheRoot } from './binaries/cache-dir.js';
export type { BinaryPaths, EnsureBinariesOptions, NodeBinaryPaths } from './binaries/ensure-binaries.js';
export {
  ensureBinaries,
  ensureCoreDns,
  ensureHelm,
  ensureNetworkPolicyEnforcer,
  ensureNodeBinaries,
  ensureVersitygw,
} from './binaries/ensure-binaries.js';
export { type DebianPostgresTag, ensureDebianPostgres } from './binaries/ensure-debian-postgres.js';
export type { EnsureNodeToolsOptions, NodeTools } from './binaries/ensure-node-tools.js';
export { ensureNodeTools } from './binaries/ensure-node-tools.js';
export type { EnsurePgBackRestOptions } from './binaries/ensure-pgbackrest.js';
export { ensurePgBackRest } from './binaries/ensure-pgbackrest.js';
export type { EnsurePostgresOptions, PostgresBuildTag } from './binaries/ensure-postgres.js';
export { ensurePostgres } from './binaries/ensure-postgres.js';
export type { NodeToolsEnv, NodeToolsPaths } from './binaries/node-tools-layout.js';
export { nodeToolsEnv, nodeToolsPaths, nodeToolsVersion } from './binaries/node-tools-layout.js';
export type { ControlPlane, ControlPlaneOptions, UserCredentials, UserOptions } from './control-plane.js';
export { startControlPlane } from './control-plane.js';
export type { Kubeconfig } from './credentials/kubeconfig.js';
export { BinaryBuildError, ComponentStartError, TestenvError, UnsupportedError } from './errors.js';
export type { FaultProxy } from './fault-proxy.js';
export { startFaultProxy } from './fault-proxy.js';
export type { BuildImagesOptions, BuiltImage, BuiltImageSet, ImageBuild } from './images/build-images.js';
export { buildImageSet, buildImages } from './images/build-images.js';
export type { BuildSpec } from './images/buildah-plan.js';
export { ImageBuilder } from './images/image-builder.js';
export { ensureNodeBaseImage } from './images/node-base-image.js';
export type { PostgresImageMajor } from './images/postgres-image-build.js';
export { POSTGRES_IMAGE_MAJORS, postgresImageBuildArgs, postgresImageBuilds } from './images/postgres-image-build.js';
export { isProcessAlive, withParentDeathSignal } from './managed-process.js';
export { postgresInstallations, postgresVersionImages, postgresVersionOf } from './postgres-images.js';
export type { ImageMapping, ImageMappings } from './process-node/image.js';
export { resolveMountPath, VOLUME_MOUNTS_ENV } from './process-node/mount-path.js';
export type { ProcessContainer } from './process-node/node-context.js';
export { leaseLoopbackBlock } from './process-node/pod-network.js';
export type { ProcessNode } from './process-node/process-node.js';
export { PROCESS_NODE_LABEL } from './process-node/process-node.js';
export type { ProcessNodesOptions } from './process-node/process-nodes.js';
export { findProcessContainer } from './process-node/process-nodes.js';
export type { CrashFreeze } from './process-node/process-tree.js';
export { crashProcessTrees } from './process-node/process-tree.js';
export { runnableAs, runnableDirAs, runnableFileAs } from './process-node/runnable-as.js';
export type {
  ServiceAddressOptions,
  ServiceEndpoint,
  ServiceEndpointReaderOptions,
} from './process-node/service-endpoints.js';
export { ServiceEndpointReader, serviceAddress, serviceEndpoints } from './process-node/service-endpoints.js';
export {
  ext4LoopUnsupportedReason,
  onlineResizeUnsupportedReason,
  type SizedVolumeBackend,
  type SizedVolumeBackendChoice,
  sizedVolumeBackend,
  sizedVolumeBackendChoice,
  sizedVolumesUnsupportedReason,
} from './process-node/volumes/host-mounts/sized-support.js';
export { PROVISIONER_NAME } from './process-node/volumes/provisioner-name.js';
export {
  SIZED_STORAGE_CLASS,
  VOLUME_BACKEND_ANNOTATION,
  VOLUME_KIND_PARAMETER,
  type VolumeKind,
} from './process-node/volumes/sized-class.js';
export { MIN_SIZED_VOLUME_MIB } from './process-node/volumes/volume-size.js';
export { containerOutput, criLogLines } from './real-node/container-output.js';
export type { NetworkPlan, NodeAddressing } from './real-node/network-plan.js';
export { RealNode } from './real-node/real-node.js';
export type { RealNodesOptions } from './real-node/real-nodes.js';
export { realNodesUnsupportedReason } from './real-node/real-nodes.js';
export type { S3ClientConfig, S3ObjectInfo } from './s3/s3-client.js';
export { S3Client, S3RequestError } from './s3/s3-client.js';
export type { S3Server, S3ServerOptions } from './s3/s3-server.js';
export { startS3Server } from './s3/s3-server.js';
export type { EnsureTestImagesOptions, TestImage, TestImages } from './test-images/ensure-test-images.js';
export { ensureTestImages } from './test-images/ensure-test-images.js';
export type {
  ImageFile,
  ImageRuntimeConfig,
  OciDescriptor,
  OciImageArchive,
  OciImageSpec,
} from './test-images/oci-archive.js';
export { buildOciImageArchive, imageTag } from './test-images/oci-archive.js';
export { ECHO_IMAGE, ECHO_PORT, ECHO_UID, PAUSE_IMAGE, TEST_IMAGES_VERSION } from './test-images/test-image-pins.js';
export type { BinaryName, ComponentSpec } from './versions.js';
export {
  allComponents,
  COREDNS_VERSION,
  corednsComponent,
  DEBIAN_POSTGRES_BIN,
  debianPostgresBuilds,
  ETCD_VERSION,
  HELM_VERSION,
  helmComponent,
  KUBE_ROUTER_VERSION,
  KUBERNETES_VERSION,
  KWOK_VERSION,
  kubeRouterComponent,
  kubernetesNodeComponent,
  nodeBaseImage,
  nodeToolsPackages,
  pgBackRestPackage,
  postgresBuilds,
  VERSITYGW_VERSION,
  versitygwComponent,
} from './versions.js';
export { waitFor, within } from './wait-for.js';
