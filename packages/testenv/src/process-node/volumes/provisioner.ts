/**
 * A local volume provisioner for process nodes and real nodes. Two StorageClasses of one
 * provisioner (`kanri.dev/process-node`), told apart by their `kanri.dev/volume` parameter:
 *
 * - the default class: each claim gets a directory under the control plane's data directory
 *   (no size of its own);
 * - `kanri-sized` (as root only): each claim gets a filesystem of its requested size, mounted on
 *   its directory, of the backend chosen once at start (`sizedVolumeBackendChoice`): ext4 in a
 *   sparse image on a loop device (`loop-volume.ts`) where a mounted ext4 can grow
 *   (CAP_SYS_RESOURCE), else a tmpfs of that size (`tmpfs-volume.ts`). The PersistentVolume
 *   records its backend (`kanri.dev/volume-backend`).
 *
 * Either way the directory is a `hostPath` PersistentVolume pre-bound to the claim
 * (kube-controller-manager's PV controller completes the binding). With reclaim policy Delete, a
 * released volume (its mount, loop device and image too) and its directory are deleted. A
 * directory is never world-writable where the Pod that uses it names its user (see
 * `waitForConsumer`).
 *
 * A bound claim that asks for more than its volume holds is expanded as the external-resizer and
 * the kubelet would do it: a sized volume grows online (ext4: image, loop device, `resize2fs` on
 * the mounted filesystem; tmpfs: `mount -o remount,size=…`), a directory needs nothing; then the PersistentVolume's capacity and the
 * claim's status record it (see `resize-status.ts`). A failed expansion is reported on the claim
 * and tried again on a later sync.
 *
 * Every process node shares the machine's filesystem and mounts, so a volume is usable from any
 * of them and carries no node affinity: a Pod that moves to another node finds its data. Real
 * nodes have mount namespaces of their own (`mountNamespaces`), where a sized volume is mounted too.
 */
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { type Api, encode, kubeTime } from '../api.js';
import { buildClaimEvent, type ClaimEventInput } from './claim-event.js';
import { type ExpansionStep, planExpansion } from './expansion-plan.js';
import {
  ensureLoopVolume,
  growLoopVolume,
  loopVolumePaths,
  mountInNamespaces,
  releaseLoopVolume,
  releaseSizedVolumesWithin,
} from './loop-volume.js';
import { isWithin } from './mount-table.js';
import { PROVISIONED_BY, PROVISIONER_NAME } from './provisioner-name.js';
import {
  resizeFailedStatus,
  resizeFinishedAnnotations,
  resizeFinishedStatus,
  resizeStarted,
  resizeStartedAnnotations,
  resizeStartedStatus,
} from './resize-status.js';
import { RetryBackoff } from './retry-backoff.js';
import {
  backendOfVolume,
  buildSizedStorageClass,
  SIZED_STORAGE_CLASS,
  VOLUME_BACKEND_ANNOTATION,
  VOLUME_KIND_PARAMETER,
  type VolumeKind,
  volumeKindOf,
} from './sized-class.js';
import { type SizedVolumeBackend, sizedVolumeBackendChoice } from './sized-support.js';
import { ensureTmpfsVolume, growTmpfsVolume, mountTmpfsInNamespaces, releaseTmpfsVolume } from './tmpfs-volume.js';
import { claimAccess } from './volume-access.js';
import { planSizedVolume } from './volume-size.js';

export { PROVISIONER_NAME } from './provisioner-name.js';

/** Set by the scheduler on a WaitForFirstConsumer claim once it placed a Pod that consumes it. */
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const MIB = 1n << 20n;

export interface ProvisionerConfig {
  readonly api: Api;
  readonly storageClassName: string;
  /**
   * The sized volumes' StorageClass. Default `kanri-sized`. Created only where sized volumes have
   * a backend (`sizedVolumeBackendChoice()`: ext4 on a loop device, or tmpfs; root either way).
   */
  readonly sizedStorageClassName?: string;
  /** Volumes are created here, one directory per claim (and a sized one's image beside it). */
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
  /**
   * PIDs of a process in each mount namespace that must see the sized volumes' mounts: real
   * nodes' holders. Such a namespace is a private copy of the machine's mounts, taken before the
   * volume existed, so each volume is mounted there as well before its PersistentVolume exists.
   */
  readonly mountNamespaces?: () => readonly number[];
}

/** The default StorageClass, annotated as the cluster default. Pure. */
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

/** How a sized volume differs from a directory in its PersistentVolume. */
export interface SizedVolumeSpec {
  /** Its real size, e.g. `96Mi` for a request of `100M`. */
  readonly capacity: string;
  /** What it is made of; recorded as annotation `kanri.dev/volume-backend`. */
  readonly backend: SizedVolumeBackend;
}

/**
 * The PersistentVolume for a claim, pre-bound to it: a directory (`hostPath` DirectoryOrCreate,
 * the request as capacity), or with `sized` a mounted sized volume (`hostPath` Directory, which
 * must be there, its size as capacity, annotated `kanri.dev/volume: loop` and
 * `kanri.dev/volume-backend: <backend>`). Pure.
 */
export function buildVolumeForClaim(
  claim: PersistentVolumeClaim,
  storageClassName: string,
  path: string,
  sized?: SizedVolumeSpec,
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${claim.metadata?.uid}`,
      annotations: {
        [PROVISIONED_BY]: PROVISIONER_NAME,
        ...(sized ? { [VOLUME_KIND_PARAMETER]: 'loop', [VOLUME_BACKEND_ANNOTATION]: sized.backend } : {}),
      },
    },
    spec: {
      capacity: { storage: sized?.capacity ?? claim.spec?.resources?.requests?.storage ?? '1Gi' },
      accessModes: claim.spec?.accessModes?.length ? claim.spec.accessModes : ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName,
      volumeMode: claim.spec?.volumeMode ?? 'Filesystem',
      hostPath: { path, type: sized ? 'Directory' : 'DirectoryOrCreate' },
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

/** What a volume of this provisioner is, from its PersistentVolume alone (its class may be gone). */
const kindOfVolume = (volume: PersistentVolume): VolumeKind =>
  volume.metadata?.annotations?.[VOLUME_KIND_PARAMETER] === 'loop' ? 'loop' : 'directory';

interface ServedClass {
  readonly kind: VolumeKind;
  readonly allowVolumeExpansion: boolean;
}

interface StorageClassObject {
  readonly metadata?: { readonly name?: string };
  readonly provisioner?: string;
  readonly parameters?: Readonly<Record<string, string>>;
  readonly allowVolumeExpansion?: boolean;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const claimPath = (claim: PersistentVolumeClaim) =>
  `/api/v1/namespaces/${encode(claim.metadata?.namespace ?? 'default')}/persistentvolumeclaims/${encode(claim.metadata?.name ?? '')}`;
const claimName = (claim: PersistentVolumeClaim) => `${claim.metadata?.namespace}/${claim.metadata?.name}`;

export class LocalProvisioner {
  readonly #config: ProvisionerConfig;
  readonly #abort = new AbortController();
  #syncing: Promise<void> | undefined;
  #again = false;
  #watches: Promise<void>[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** Set once the sized class exists: what this machine makes sized volumes of (chosen once, at start). */
  #backend: SizedVolumeBackend | undefined;
  readonly #backoff = new RetryBackoff();
  /** Claims already told why they get no volume (once each: it will not change). */
  readonly #refused = new Set<string>();
  #eventCount = 0;

  constructor(config: ProvisionerConfig) {
    this.#config = config;
  }

  get #sizedClassName(): string {
    return this.#config.sizedStorageClassName ?? SIZED_STORAGE_CLASS;
  }

  async start(): Promise<void> {
    const { api, log } = this.#config;
    await mkdir(this.#config.volumesDir, { recursive: true, mode: 0o711 });
    await api.create(
      '/apis/storage.k8s.io/v1/storageclasses',
      buildStorageClass(this.#config.storageClassName, this.#config.waitForConsumer),
    );
    const choice = await sizedVolumeBackendChoice();
    if (choice.backend === undefined) {
      log(`provisioner: no StorageClass ${this.#sizedClassName}: ${choice.reason}`);
    } else {
      await api.create(
        '/apis/storage.k8s.io/v1/storageclasses',
        buildSizedStorageClass(this.#sizedClassName, this.#config.waitForConsumer),
      );
      this.#backend = choice.backend;
      log(`provisioner: ${this.#sizedClassName} volumes are ${choice.backend}: ${choice.reason}`);
    }
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
      .catch((error: unknown) => this.#config.log(`provisioner: ${messageOf(error)}`))
      .finally(() => {
        this.#syncing = undefined;
        if (this.#again) {
          this.#again = false;
          this.requestSync();
        }
      });
  }

  async #sync(): Promise<void> {
    const { api } = this.#config;
    const [claims, volumes, classes] = await Promise.all([
      api.list<PersistentVolumeClaim>('/api/v1/persistentvolumeclaims'),
      api.list<PersistentVolume>('/api/v1/persistentvolumes'),
      api.list<StorageClassObject>('/apis/storage.k8s.io/v1/storageclasses'),
    ]);
    const served = new Map<string, ServedClass>();
    for (const sc of classes) {
      const name = sc.metadata?.name ?? '';
      if (sc.provisioner !== PROVISIONER_NAME) continue;
      if (name !== this.#config.storageClassName && !(this.#backend && name === this.#sizedClassName)) continue;
      served.set(name, { kind: volumeKindOf(sc.parameters), allowVolumeExpansion: sc.allowVolumeExpansion === true });
    }
    await this.#provision(claims, volumes, served);
    await this.#expand(claims, volumes, served);
    await this.#release(volumes);
  }

  async #provision(
    claims: readonly PersistentVolumeClaim[],
    volumes: readonly PersistentVolume[],
    served: ReadonlyMap<string, ServedClass>,
  ): Promise<void> {
    const { api, volumesDir } = this.#config;
    const volumeFor = new Set(volumes.map((v) => v.spec?.claimRef?.uid).filter(Boolean));
    for (const claim of claims) {
      if (this.#abort.signal.aborted) return;
      const className = claim.spec?.storageClassName ?? '';
      const sc = served.get(className);
      const uid = claim.metadata?.uid ?? '';
      if (!sc || claim.spec?.volumeName) continue;
      if (claim.metadata?.deletionTimestamp || volumeFor.has(uid)) continue;
      let mib: number | undefined;
      const backend = this.#backend;
      if (sc.kind === 'loop') {
        if (!backend) continue;
        const plan = planSizedVolume(claim.spec?.resources?.requests?.storage);
        if ('refused' in plan) {
          await this.#refuse(claim, plan.refused);
          continue;
        }
        mib = plan.mib;
      }
      let consumer: Pod | undefined;
      if (this.#config.waitForConsumer) {
        if (!claim.metadata?.annotations?.[SELECTED_NODE]) continue;
        consumer = await this.#consumerOf(claim);
        if (!consumer) continue; // gone meanwhile: the scheduler picks again
      }
      const key = `provision/${uid}`;
      if (this.#backoff.waiting(key, Date.now())) continue;
      const path = join(volumesDir, `pvc-${uid}`);
      try {
        if (mib === undefined) {
          await mkdir(path, { recursive: true });
        } else if (backend === 'tmpfs') {
          await ensureTmpfsVolume(path, BigInt(mib) * MIB);
          await mountTmpfsInNamespaces(path, this.#config.mountNamespaces?.() ?? []);
        } else {
          const paths = loopVolumePaths(path);
          const device = await ensureLoopVolume(paths, BigInt(mib) * MIB);
          await mountInNamespaces(paths, device, this.#config.mountNamespaces?.() ?? []);
        }
        await this.#giveTo(path, consumer, claim);
      } catch (error) {
        const delay = this.#retryLater(key);
        this.#config.log(
          `provisioning ${path} for ${claimName(claim)} failed: ${messageOf(error)}; retrying in ${delay / 1000} s`,
        );
        await this.#event(claim, { type: 'Warning', reason: 'ProvisioningFailed', message: messageOf(error) });
        continue;
      }
      this.#backoff.succeeded(key);
      const sized = mib === undefined || !backend ? undefined : { capacity: `${mib}Mi`, backend };
      const created = await api.create('/api/v1/persistentvolumes', buildVolumeForClaim(claim, className, path, sized));
      if (created) {
        this.#config.log(
          `provisioned ${path}${sized ? ` (${sized.capacity}, ${sized.backend})` : ''} for ${claimName(claim)}`,
        );
      }
    }
  }

  /** Tells a claim once why it gets no volume: in the log and, as a provisioner does, in an Event. */
  async #refuse(claim: PersistentVolumeClaim, why: string): Promise<void> {
    const uid = claim.metadata?.uid ?? '';
    if (this.#refused.has(uid)) return;
    this.#refused.add(uid);
    const message = `${claim.spec?.storageClassName}: claim ${claimName(claim)} ${why}`;
    this.#config.log(`provisioner: not provisioning: ${message}`);
    await this.#event(claim, { type: 'Warning', reason: 'ProvisioningFailed', message });
  }

  async #expand(
    claims: readonly PersistentVolumeClaim[],
    volumes: readonly PersistentVolume[],
    served: ReadonlyMap<string, ServedClass>,
  ): Promise<void> {
    const byUid = new Map(claims.map((c) => [c.metadata?.uid, c]));
    for (const volume of volumes) {
      if (this.#abort.signal.aborted) return;
      if (volume.metadata?.annotations?.[PROVISIONED_BY] !== PROVISIONER_NAME) continue;
      const claim = byUid.get(volume.spec?.claimRef?.uid);
      if (!claim) continue;
      const kind = kindOfVolume(volume);
      const sc = served.get(volume.spec?.storageClassName ?? '');
      const step = planExpansion({ claim, volume, kind, allowVolumeExpansion: sc?.allowVolumeExpansion === true });
      if (step.kind === 'none') continue;
      const key = `expand/${claim.metadata?.uid}`;
      if (this.#backoff.waiting(key, Date.now())) continue;
      const started = Date.now();
      try {
        if (step.kind === 'expand') await this.#grow(claim, volume, kind, step);
        else await this.#finishResize(claim, step.capacity);
        this.#backoff.succeeded(key);
      } catch (error) {
        const delay = this.#retryLater(key);
        const what = step.kind === 'expand' ? `from ${step.from} to ${step.to}` : `(recording ${step.capacity})`;
        const message = messageOf(error);
        this.#config.log(
          `expansion of ${claimName(claim)} (${volume.metadata?.name}) ${what} failed after ${Date.now() - started} ms: ${message}; retrying in ${delay / 1000} s`,
        );
        await this.#reportResizeFailure(claim, message);
      }
    }
  }

  /** One expansion, as the external-resizer (and, for a sized volume, the kubelet's resize2fs) would do it. */
  async #grow(
    claim: PersistentVolumeClaim,
    volume: PersistentVolume,
    kind: VolumeKind,
    step: Extract<ExpansionStep, { kind: 'expand' }>,
  ): Promise<void> {
    const { api, volumesDir } = this.#config;
    const name = volume.metadata?.name ?? '';
    const started = Date.now();
    let current = claim;
    if (!resizeStarted(current, step.request)) {
      current = await api.patch<PersistentVolumeClaim>(claimPath(current), resizeStartedAnnotations(PROVISIONER_NAME));
      current = await api.patch<PersistentVolumeClaim>(
        `${claimPath(current)}/status`,
        resizeStartedStatus(current, step.request, kubeTime()),
      );
      await this.#event(current, {
        type: 'Normal',
        reason: 'Resizing',
        message: `External resizer is resizing volume ${name}`,
      });
    }
    if (kind === 'loop') {
      const path = volume.spec?.hostPath?.path ?? '';
      if (!isWithin(path, volumesDir) || path === volumesDir)
        throw new Error(`${path} is not a volume of this provisioner`);
      if (backendOfVolume(volume.metadata?.annotations) === 'tmpfs') {
        await growTmpfsVolume(path, step.toBytes, this.#config.mountNamespaces?.() ?? []);
      } else {
        await growLoopVolume(loopVolumePaths(path), step.toBytes);
      }
    }
    await api.patch(`/api/v1/persistentvolumes/${encode(name)}`, { spec: { capacity: { storage: step.to } } });
    await this.#finishResize(current, step.to);
    this.#config.log(
      `expanded ${claimName(claim)} (${name}${kind === 'loop' ? `, ${backendOfVolume(volume.metadata?.annotations)}, online` : ''}) from ${step.from} to ${step.to} in ${Date.now() - started} ms`,
    );
  }

  async #finishResize(claim: PersistentVolumeClaim, capacity: string): Promise<void> {
    const { api } = this.#config;
    const done = await api.patch<PersistentVolumeClaim>(
      `${claimPath(claim)}/status`,
      resizeFinishedStatus(claim, capacity),
    );
    await api.patch(claimPath(done), resizeFinishedAnnotations());
    await this.#event(done, { type: 'Normal', reason: 'VolumeResizeSuccessful', message: 'Resize volume succeeded' });
  }

  /** The claim says why its resize failed (`ControllerResizeError`), and an Event says it too. */
  async #reportResizeFailure(claim: PersistentVolumeClaim, message: string): Promise<void> {
    const { api } = this.#config;
    try {
      const latest = (await api.get<PersistentVolumeClaim>(claimPath(claim))) ?? claim;
      await api.patch(`${claimPath(latest)}/status`, resizeFailedStatus(latest, message, kubeTime()));
    } catch (error) {
      this.#config.log(`provisioner: recording the failed expansion on ${claimName(claim)}: ${messageOf(error)}`);
    }
    await this.#event(claim, { type: 'Warning', reason: 'VolumeResizeFailed', message });
  }

  async #release(volumes: readonly PersistentVolume[]): Promise<void> {
    const { api, volumesDir } = this.#config;
    for (const volume of volumes) {
      if (this.#abort.signal.aborted) return;
      if (volume.metadata?.annotations?.[PROVISIONED_BY] !== PROVISIONER_NAME) continue;
      if (volume.spec?.persistentVolumeReclaimPolicy !== 'Delete' || volume.status?.phase !== 'Released') continue;
      const path = volume.spec.hostPath?.path;
      const ours = path !== undefined && path !== volumesDir && isWithin(path, volumesDir);
      try {
        if (ours && kindOfVolume(volume) === 'loop') {
          const pids = this.#config.mountNamespaces?.() ?? [];
          if (backendOfVolume(volume.metadata?.annotations) === 'tmpfs') await releaseTmpfsVolume(path, pids);
          else await releaseLoopVolume(loopVolumePaths(path), pids);
        }
        if (ours) await rm(path, { recursive: true, force: true });
        await api.delete(`/api/v1/persistentvolumes/${encode(volume.metadata?.name ?? '')}`);
        this.#config.log(`deleted released volume ${volume.metadata?.name}`);
      } catch (error) {
        this.#config.log(`releasing ${volume.metadata?.name} failed: ${messageOf(error)}; retrying on the next sync`);
      }
    }
  }

  /** Records a failure of `key` and wakes the provisioner once it may be tried again; returns the delay. */
  #retryLater(key: string): number {
    const delay = this.#backoff.failed(key, Date.now());
    setTimeout(() => this.requestSync(), delay).unref();
    return delay;
  }

  async #event(claim: PersistentVolumeClaim, input: ClaimEventInput): Promise<void> {
    const suffix = `${Date.now().toString(16)}${(this.#eventCount++).toString(16).padStart(4, '0')}`;
    const event = buildClaimEvent(claim, input, new Date(), suffix);
    await this.#config.api
      .create(`/api/v1/namespaces/${encode(claim.metadata?.namespace ?? 'default')}/events`, event)
      .catch((error: unknown) => this.#config.log(`provisioner: event on ${claimName(claim)}: ${messageOf(error)}`));
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

  /**
   * Stops syncing, then unmounts and detaches every sized volume under the volumes directory
   * (call it after the Pods that use them stopped); their directories and images go with the data
   * directory.
   */
  async stop(): Promise<void> {
    this.#abort.abort();
    if (this.#timer) clearInterval(this.#timer);
    await this.#syncing;
    await Promise.all(this.#watches);
    if (!this.#backend) return;
    try {
      const released = await releaseSizedVolumesWithin(this.#config.volumesDir);
      if (released.unmounted.length + released.detached.length > 0) {
        this.#config.log(
          `provisioner: stopped; unmounted ${released.unmounted.length} sized volume(s), detached ${released.detached.join(', ') || 'no loop device'}`,
        );
      }
      if (released.stillMounted.length > 0) {
        this.#config.log(`provisioner: still mounted after stop: ${released.stillMounted.join(', ')}`);
      }
    } catch (error) {
      this.#config.log(`provisioner: releasing sized volumes at stop: ${messageOf(error)}`);
    }
  }
}
