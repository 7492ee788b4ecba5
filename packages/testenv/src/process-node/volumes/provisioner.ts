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
 * A bound claim that asks for more than its volume holds is expanded online as the
 * external-resizer and the kubelet would do it (`claim-expansion.ts`); released volumes are
 * deleted by `volume-release.ts`. This module runs them: it watches, syncs and provisions.
 *
 * Every process node shares the machine's filesystem and mounts, so a volume is usable from any
 * of them and carries no node affinity: a Pod that moves to another node finds its data. Real
 * nodes have mount namespaces of their own (`mountNamespaces`), where a sized volume is mounted too.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { type Api, encode } from '../api.js';
import { consumerOf, giveTo, SELECTED_NODE } from './claim-consumer.js';
import { buildClaimEvent, type ClaimEventInput } from './claim-event.js';
import { expandClaims } from './claim-expansion.js';
import {
  ensureLoopVolume,
  loopVolumePaths,
  mountInNamespaces,
  releaseSizedVolumesWithin,
} from './host-mounts/loop-volume.js';
import { type SizedVolumeBackend, sizedVolumeBackendChoice } from './host-mounts/sized-support.js';
import { ensureTmpfsVolume, mountTmpfsInNamespaces } from './host-mounts/tmpfs-volume.js';
import { PROVISIONER_NAME } from './provisioner-name.js';
import { buildStorageClass, buildVolumeForClaim } from './provisioner-objects.js';
import { RetryBackoff } from './retry-backoff.js';
import { buildSizedStorageClass, SIZED_STORAGE_CLASS, volumeKindOf } from './sized-class.js';
import { claimName, messageOf, type ServedClass, type SyncContext } from './sync-context.js';
import { releaseVolumes } from './volume-release.js';
import { planSizedVolume } from './volume-size.js';

export { PROVISIONER_NAME } from './provisioner-name.js';
export { buildStorageClass, buildVolumeForClaim, type SizedVolumeSpec } from './provisioner-objects.js';

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

interface StorageClassObject {
  readonly metadata?: { readonly name?: string };
  readonly provisioner?: string;
  readonly parameters?: Readonly<Record<string, string>>;
  readonly allowVolumeExpansion?: boolean;
}

/**
 * Serves the local StorageClasses: watches claims and volumes, and on each change (or every 10 s)
 * provisions, expands and releases, one sync at a time.
 */
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

  readonly #context: SyncContext;

  constructor(config: ProvisionerConfig) {
    this.#config = config;
    this.#context = {
      api: config.api,
      volumesDir: config.volumesDir,
      log: config.log,
      mountNamespaces: () => config.mountNamespaces?.() ?? [],
      signal: this.#abort.signal,
      backoff: this.#backoff,
      retryLater: (key) => this.#retryLater(key),
      event: (claim, input) => this.#event(claim, input),
    };
  }

  get #sizedClassName(): string {
    return this.#config.sizedStorageClassName ?? SIZED_STORAGE_CLASS;
  }

  /** Creates the volumes directory and the StorageClasses, then starts watching. */
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

  /** Syncs soon; a request during a sync makes one more sync after it, not one each. */
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
    await expandClaims(this.#context, claims, volumes, served);
    await releaseVolumes(this.#context, volumes);
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
        consumer = await consumerOf(api, claim);
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
        await giveTo(path, consumer, claim);
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
