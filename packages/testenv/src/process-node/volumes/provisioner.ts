/**
 * A local volume provisioner for process nodes and real nodes: a default StorageClass whose claims get a
 * directory under the control plane's data directory, as a `hostPath` PersistentVolume pre-bound
 * to the claim (kube-controller-manager's PV controller completes the binding). With reclaim
 * policy Delete, a released volume and its directory are deleted. A directory is never
 * world-writable where the Pod that uses it names its user (see `waitForConsumer`).
 *
 * Every process node shares the machine's filesystem, so a volume is usable from any of them and
 * carries no node affinity: a Pod that moves to another node finds its data.
 */
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { type Api, encode } from '../api.js';
import { claimAccess } from './volume-access.js';

export const PROVISIONER_NAME = 'kanri.dev/process-node';
const PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';
/** Set by the scheduler on a WaitForFirstConsumer claim once it placed a Pod that consumes it. */
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';

export interface ProvisionerConfig {
  readonly api: Api;
  readonly storageClassName: string;
  /** Volumes are created here, one directory per claim. */
  readonly volumesDir: string;
  readonly log: (message: string) => void;
  /**
   * Provision a claim once the scheduler placed a Pod that consumes it (WaitForFirstConsumer), and
   * give the directory to that Pod's user (`claimAccess`): real nodes' kubelets apply no fsGroup to
   * hostPath volumes, so the directory must be the Pod's before it starts. Where the Pod names no
   * user, 0777, as Rancher's local-path provisioner makes every one. Unset: a new directory is
   * root's alone, and process nodes hand it to the container's user when they mount it.
   */
  readonly waitForConsumer?: boolean;
}

/** The StorageClass, annotated as the cluster default. Pure. */
export function buildStorageClass(name: string, waitForConsumer = false): Record<string, unknown> {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: PROVISIONER_NAME,
    reclaimPolicy: 'Delete',
    volumeBindingMode: waitForConsumer ? 'WaitForFirstConsumer' : 'Immediate',
    allowVolumeExpansion: true,
  };
}

/** The PersistentVolume for a claim, pre-bound to it. Pure. */
export function buildVolumeForClaim(
  claim: PersistentVolumeClaim,
  storageClassName: string,
  path: string,
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `pvc-${claim.metadata?.uid}`, annotations: { [PROVISIONED_BY]: PROVISIONER_NAME } },
    spec: {
      capacity: { storage: claim.spec?.resources?.requests?.storage ?? '1Gi' },
      accessModes: claim.spec?.accessModes?.length ? claim.spec.accessModes : ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName,
      volumeMode: claim.spec?.volumeMode ?? 'Filesystem',
      hostPath: { path, type: 'DirectoryOrCreate' },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata?.namespace,
        name: claim.metadata?.name,
        uid: claim.metadata?.uid,
      },
    },
  };
}

export class LocalProvisioner {
  readonly #config: ProvisionerConfig;
  readonly #abort = new AbortController();
  #syncing: Promise<void> | undefined;
  #again = false;
  #watches: Promise<void>[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(config: ProvisionerConfig) {
    this.#config = config;
  }

  async start(): Promise<void> {
    const { api } = this.#config;
    await mkdir(this.#config.volumesDir, { recursive: true, mode: 0o711 });
    await api.create(
      '/apis/storage.k8s.io/v1/storageclasses',
      buildStorageClass(this.#config.storageClassName, this.#config.waitForConsumer),
    );
    const trigger = () => this.requestSync();
    this.#watches = [
      api.watch('/api/v1/persistentvolumeclaims', trigger, this.#abort.signal),
      api.watch('/api/v1/persistentvolumes', trigger, this.#abort.signal),
    ];
    this.#timer = setInterval(trigger, 10_000);
    this.#timer.unref();
    this.requestSync();
  }

  requestSync(): void {
    if (this.#abort.signal.aborted) return;
    if (this.#syncing) {
      this.#again = true;
      return;
    }
    this.#syncing = this.#sync()
      .catch((error: unknown) =>
        this.#config.log(`provisioner: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        this.#syncing = undefined;
        if (this.#again) {
          this.#again = false;
          this.requestSync();
        }
      });
  }

  async #sync(): Promise<void> {
    const { api, storageClassName, volumesDir } = this.#config;
    const [claims, volumes] = await Promise.all([
      api.list<PersistentVolumeClaim>('/api/v1/persistentvolumeclaims'),
      api.list<PersistentVolume>('/api/v1/persistentvolumes'),
    ]);
    const volumeFor = new Set(volumes.map((v) => v.spec?.claimRef?.uid).filter(Boolean));
    for (const claim of claims) {
      if (this.#abort.signal.aborted) return;
      if (claim.spec?.storageClassName !== storageClassName || claim.spec.volumeName) continue;
      if (claim.metadata?.deletionTimestamp || volumeFor.has(claim.metadata?.uid)) continue;
      let consumer: Pod | undefined;
      if (this.#config.waitForConsumer) {
        if (!claim.metadata?.annotations?.[SELECTED_NODE]) continue;
        consumer = await this.#consumerOf(claim);
        if (!consumer) continue; // gone meanwhile: the scheduler picks again
      }
      const path = join(volumesDir, `pvc-${claim.metadata?.uid}`);
      await mkdir(path, { recursive: true });
      await this.#giveTo(path, consumer, claim);
      const created = await api.create('/api/v1/persistentvolumes', buildVolumeForClaim(claim, storageClassName, path));
      if (created) this.#config.log(`provisioned ${path} for ${claim.metadata?.namespace}/${claim.metadata?.name}`);
    }
    for (const volume of volumes) {
      if (volume.metadata?.annotations?.[PROVISIONED_BY] !== PROVISIONER_NAME) continue;
      if (volume.spec?.persistentVolumeReclaimPolicy !== 'Delete' || volume.status?.phase !== 'Released') continue;
      const path = volume.spec.hostPath?.path;
      if (path?.startsWith(`${volumesDir}/`)) await rm(path, { recursive: true, force: true });
      await api.delete(`/api/v1/persistentvolumes/${encode(volume.metadata?.name ?? '')}`);
      this.#config.log(`deleted released volume ${volume.metadata?.name}`);
    }
  }

  /** The Pod a claim waits for: one in its namespace that mounts it and has not finished. */
  async #consumerOf(claim: PersistentVolumeClaim): Promise<Pod | undefined> {
    const namespace = claim.metadata?.namespace ?? 'default';
    const pods = await this.#config.api.list<Pod>(`/api/v1/namespaces/${encode(namespace)}/pods`);
    return pods.find(
      (p) =>
        !p.metadata?.deletionTimestamp &&
        p.status?.phase !== 'Succeeded' &&
        p.status?.phase !== 'Failed' &&
        p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim.metadata?.name),
    );
  }

  /** The directory's owner and mode: root's alone until a process node mounts it, else its consumer's. */
  async #giveTo(path: string, consumer: Pod | undefined, claim: PersistentVolumeClaim): Promise<void> {
    const access = consumer && claimAccess(consumer, claim.metadata?.name ?? '');
    if (access) await chown(path, access.uid, access.gid);
    // mkdir's mode is masked by the umask; chmod is not.
    await chmod(path, access?.mode ?? (consumer ? 0o777 : 0o700));
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    if (this.#timer) clearInterval(this.#timer);
    await this.#syncing;
    await Promise.all(this.#watches);
  }
}
