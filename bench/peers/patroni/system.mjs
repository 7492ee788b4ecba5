// Patroni 4 on Kubernetes for `npm run bench:peers` (issue 39), the PeerSystem of
// bench/peers/system.mjs. Patroni is no operator: as Patroni's kubernetes/ example and Zalando's
// Spilo run it, each cluster is a StatefulSet of Pods running Patroni with the Kubernetes DCS
// (leader lock in the Endpoints named after the cluster, which back its selectorless read-write
// Service), and Patroni labels its Pods with their role. Nothing is installed cluster-wide.
import { readFileSync } from 'node:fs';
import { ignoreNotFound } from '@kanri/client';
import { buildImages, postgresBuilds } from '@kanri/testenv';
import { queryOnce } from '../../failover/writer.mjs';
import { imageBuilds, imageTags, patroniVersion, REQUIREMENTS } from './images.mjs';
import {
  API_PORT,
  clusterLabels,
  clusterObjects,
  clusterState,
  LEADER_LABEL_VALUE,
  PG_MAJOR,
  PG_PORT,
  ROLE_LABEL,
  randomPassword,
  SUPERUSER,
  selector,
} from './manifests.mjs';

export const PATRONI_VERSION = patroniVersion(readFileSync(REQUIREMENTS, 'utf8'));
export const IMAGES = imageTags(PATRONI_VERSION, PG_MAJOR);
const FIELD_MANAGER = 'kanri-bench-patroni';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `GET`/`POST` on a member's REST API (the host routes to Pod addresses); its status and body. */
async function memberApi(ip, path, { method = 'GET', body, timeoutMs = 3_000 } = {}) {
  const response = await fetch(`http://${ip}:${API_PORT}${path}`, {
    method,
    ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

/** Runs `sql` once at `target`; resolves its rows or rejects. */
const query = (target, sql) => queryOnce(target.address, target, sql);

/**
 * Polls `check` (resolving a truthy value when done, or a string saying what it waits for) until
 * done or `timeoutMs`; the error names the last state.
 */
async function poll(what, check, timeoutMs, intervalMs = 1_000) {
  const deadline = Date.now() + timeoutMs;
  let last = 'not checked yet';
  for (;;) {
    try {
      const result = await check();
      if (result === true || (result && typeof result === 'object')) return result;
      if (typeof result === 'string') last = result;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() >= deadline) throw new Error(`${what}: not within ${timeoutMs} ms (${last})`);
    await sleep(intervalMs);
  }
}

/** @type {import('../system.mjs').PeerSystem} */
export const system = {
  name: 'patroni',

  backupsUnsupported:
    'Patroni has no backup or restore of its own: it calls the tool a team sets up (pgBackRest, WAL-G, barman) through ' +
    'archive_command, create_replica_methods and a custom bootstrap, so there is no Patroni figure to compare',

  async prepare({ log }) {
    log(`patroni: building ${IMAGES.primary} and ${IMAGES.alternate} (bench/peers/patroni/Dockerfile)`);
    const built = await buildImages(
      imageBuilds({ version: PATRONI_VERSION, major: PG_MAJOR, wheel: postgresBuilds[PG_MAJOR] }),
      { onOutput: (line) => /STEP \d+\/\d+: (FROM|COPY|RUN)/.test(line) && log(`patroni: ${line.slice(0, 110)}`) },
    );
    for (const image of built)
      log(`patroni: ${image.tag}: ${(image.bytes / 1e6).toFixed(0)} MB, ${(image.ms / 1000).toFixed(1)} s`);
    return { imageArchives: built.map((image) => image.archive) };
  },

  // Patroni's RBAC is per cluster (a Role in its namespace), and there is no operator.
  async install(env) {
    env.log('patroni: nothing to install cluster-wide (no operator; RBAC is per cluster)');
  },

  async operatorPods() {
    return [];
  },

  async createCluster(env, spec) {
    const { client, log } = env;
    const { name, namespace } = spec;
    const labels = clusterLabels(name);
    const labelSelector = selector(labels);
    const passwords = { superuser: randomPassword(), replication: randomPassword() };
    const objects = clusterObjects({
      spec,
      image: IMAGES.primary,
      version: PATRONI_VERSION,
      passwords,
      nodes: env.instanceNodes,
    });
    for (const object of objects) {
      await client
        .resource(object.apiVersion, object.kind)
        .apply(object, { namespace, fieldManager: FIELD_MANAGER, force: true });
    }
    log(`patroni: ${namespace}/${name}: ${objects.map((o) => o.kind).join(', ')} applied`);

    const pods = client.resource('v1', 'Pod');
    const listPods = async () => (await pods.list({ namespace, labelSelector })).items;
    /** The image the last rollImage asked for. @type {string | undefined} */
    let rolledTo;
    const target = async () => {
      const service = await client.resource('v1', 'Service').get(name, { namespace });
      const ip = service.spec?.clusterIP;
      if (!ip) throw new Error(`Service ${namespace}/${name} has no cluster IP`);
      return { address: `${ip}:${PG_PORT}`, user: SUPERUSER, password: passwords.superuser, database: 'postgres' };
    };
    /** The cluster as the first member that answers sees it (any member serves `/cluster`). */
    const clusterView = async () => {
      const candidates = (await listPods()).filter((p) => p.status?.podIP && !p.metadata?.deletionTimestamp);
      let lastError = 'no Pod has an address';
      for (const pod of candidates) {
        try {
          const { status, json } = await memberApi(pod.status.podIP, '/cluster');
          if (status === 200 && json) return { ...clusterState(json, spec.instances), pods: candidates, body: json };
          lastError = `${pod.metadata.name}: GET /cluster ${status}`;
        } catch (error) {
          lastError = `${pod.metadata.name}: ${error instanceof Error ? error.message : error}`;
        }
      }
      throw new Error(lastError);
    };
    const ready = async () => {
      const view = await clusterView();
      if (!view.ready) return `members: ${view.members.join('; ') || 'none'}`;
      // The write goes through the Service, so it checks Patroni's Endpoints and kube-proxy too;
      // txid_current() assigns a transaction ID, which a standby refuses, and its commit waits
      // for the synchronous standby in synchronous mode.
      await query(await target(), 'SELECT txid_current()');
      return true;
    };

    return {
      async waitReady(timeoutMs) {
        await poll(`patroni ${namespace}/${name} ready`, ready, timeoutMs);
      },

      writeTarget: target,

      async primary() {
        const labelled = (
          await pods.list({ namespace, labelSelector: `${labelSelector},${ROLE_LABEL}=${LEADER_LABEL_VALUE}` })
        ).items;
        let pod = labelled.length === 1 ? labelled[0] : undefined;
        if (labelled.length > 1) {
          // Between a new leader's label and the old one's removal both carry it: the lock decides.
          const lock = await client.resource('v1', 'Endpoints').get(name, { namespace });
          pod = labelled.find((p) => p.metadata?.name === lock.metadata?.annotations?.leader);
        }
        if (!pod) throw new Error(`patroni ${namespace}/${name}: no Pod labelled ${ROLE_LABEL}=${LEADER_LABEL_VALUE}`);
        return { pod: pod.metadata.name, node: pod.spec?.nodeName ?? '' };
      },

      async switchover() {
        const view = await clusterView();
        if (!view.leader) throw new Error(`patroni ${namespace}/${name}: no leader to switch over from`);
        const leaderPod = view.pods.find((p) => p.metadata?.name === view.leader);
        if (!leaderPod) throw new Error(`patroni ${namespace}/${name}: the leader ${view.leader} has no Pod`);
        // No candidate: Patroni picks the healthiest (in synchronous mode, the synchronous standby).
        // Patroni answers once the switchover is done (or failed), within its own poll of ~30 s.
        const { status, text } = await memberApi(leaderPod.status.podIP, '/switchover', {
          method: 'POST',
          body: { leader: view.leader },
          timeoutMs: 60_000,
        });
        if (status !== 200) throw new Error(`patroni switchover from ${view.leader}: ${status} ${text}`);
        log(`patroni: ${namespace}/${name}: ${text.trim()}`);
      },

      async rollImage() {
        const sets = client.resource('apps/v1', 'StatefulSet');
        const from =
          (await sets.get(name, { namespace })).spec?.template?.spec?.containers?.[0]?.image ?? IMAGES.primary;
        rolledTo = from === IMAGES.alternate ? IMAGES.primary : IMAGES.alternate;
        await sets.patch(
          name,
          { spec: { template: { spec: { containers: [{ name: 'patroni', image: rolledTo }] } } } },
          { namespace, type: 'strategic' },
        );
        return { from, to: rolledTo };
      },

      async waitRolled(timeoutMs) {
        await poll(
          `patroni ${namespace}/${name} rolled to ${rolledTo ?? IMAGES.alternate}`,
          async () => {
            const set = await client.resource('apps/v1', 'StatefulSet').get(name, { namespace });
            const s = set.status ?? {};
            if (
              (s.observedGeneration ?? 0) < (set.metadata?.generation ?? 0) ||
              s.updateRevision !== s.currentRevision ||
              s.updatedReplicas !== spec.instances ||
              s.readyReplicas !== spec.instances
            )
              return `StatefulSet: ${s.updatedReplicas ?? 0} updated, ${s.readyReplicas ?? 0} ready`;
            const stale = (await listPods()).filter(
              (p) => p.spec?.containers?.[0]?.image !== (rolledTo ?? IMAGES.alternate),
            );
            if (stale.length) return `still on the old image: ${stale.map((p) => p.metadata.name).join(', ')}`;
            return ready();
          },
          timeoutMs,
        );
      },

      async instancePods() {
        return (await listPods()).map((p) => p.metadata.name).sort();
      },

      async delete() {
        const named = (apiVersion, kind, n) =>
          ignoreNotFound(client.resource(apiVersion, kind).delete(n, { namespace }));
        await named('apps/v1', 'StatefulSet', name);
        await poll(
          `patroni ${namespace}/${name}: Pods gone`,
          async () => (await listPods()).length === 0 || 'Pods remain',
          120_000,
        );
        // Patroni's own objects: the leader, `-config`, `-sync` and `-failover` Endpoints (all
        // labelled like its Pods), and ConfigMaps if it ever ran without use_endpoints.
        for (const kind of ['PersistentVolumeClaim', 'Endpoints', 'ConfigMap']) {
          const resource = client.resource('v1', kind);
          for (const item of (await resource.list({ namespace, labelSelector })).items)
            await ignoreNotFound(resource.delete(item.metadata.name, { namespace }));
        }
        await named('v1', 'Service', name);
        await named('v1', 'Service', `${name}-config`);
        await named('v1', 'Secret', name);
        await named('rbac.authorization.k8s.io/v1', 'RoleBinding', name);
        await named('rbac.authorization.k8s.io/v1', 'Role', name);
        await named('v1', 'ServiceAccount', name);
        await poll(
          `patroni ${namespace}/${name}: volumes gone`,
          async () =>
            (await client.resource('v1', 'PersistentVolumeClaim').list({ namespace, labelSelector })).items.length ===
              0 || 'PersistentVolumeClaims remain',
          120_000,
        );
      },
    };
  },
};

export default system;
