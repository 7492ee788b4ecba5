// One trial of bench:rollout on Kanri's 3-instance cluster under the libpq client's writes: a
// rolling image update (the change under test), a plain switchover (the reference: the issue's
// goal is a rolling update's longest write gap at most one switchover's), or a major upgrade. Pods are replaced during
// a rollout and come back with new addresses, so the client's host list and the writable probes
// follow the Pods every 250 ms, as a client behind the Service would.
import { setTimeout as sleep } from 'node:timers/promises';
import { ANNOTATION, names, PostgresClusterResource } from '../../packages/postgres/dist/src/index.js';
import { waitFor } from '../../packages/testenv/dist/src/index.js';
import { quantityValue } from '../../packages/timing/dist/src/index.js';
import { lostReport, round1 } from '../failover/trial.mjs';
import { WritableProbe } from '../failover/writable-probe.mjs';
import { longestGap } from '../failures/gaps.mjs';

const NS = 'default';

/** Lease holders in the order seen ({ holder, at }), polled every 100 ms: each change is a switchover (or failover). */
async function watchHolders(client, cluster, stopped) {
  const leases = client.resource('coordination.k8s.io/v1', 'Lease');
  const holders = [];
  while (!stopped()) {
    const holder = await leases
      .get(names.leaderLease(cluster), { namespace: NS })
      .then((l) => l.spec?.holderIdentity)
      .catch(() => undefined);
    if (holder && holders.at(-1)?.holder !== holder) holders.push({ holder, at: performance.now() });
    await sleep(100);
  }
  return holders;
}

/** Where the longest gap between `from` and `to` starts (longestGap's gap). */
function gapStart(times, from, to) {
  let previous = from;
  let best = { length: -1, start: from };
  for (const t of [...times.filter((x) => x > from && x <= to), to]) {
    if (t - previous > best.length) best = { length: t - previous, start: previous };
    previous = t;
  }
  return best.start;
}

/**
 * @param system startKanriSystem's adapter
 * @param writer a LibpqWriter
 * @param kind 'rollout' (to the image `image`), 'major' (a major upgrade to `image`, whose tag is the major),
 *   'resize' (every data volume `growMi` MiB larger, online) or 'switchover'
 */
export async function runRolloutTrial(
  system,
  writer,
  trial,
  kind,
  { image, growMi = 512, log = () => {}, timeoutMs = 10 * 60_000 },
) {
  const { client, clusterName } = system;
  const clusters = client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster');
  await system.waitHealthy();
  const before = await system.primary();
  let addresses = '';
  const probes = [];
  // When each member came back with a new address (its Pod replaced), for locating the gap.
  const replaced = [];
  const seen = new Map();
  const follow = async () => {
    const members = (await system.instances()).sort((a, b) => a.name.localeCompare(b.name));
    for (const m of members) {
      if (seen.has(m.name) && seen.get(m.name) !== m.address) replaced.push({ name: m.name, at: performance.now() });
      seen.set(m.name, m.address);
    }
    const next = members.map((m) => m.address);
    if (next.join(',') === addresses) return;
    const known = new Set(addresses.split(','));
    addresses = next.join(',');
    writer.setHosts(next);
    const fresh = next.filter((a) => !known.has(a));
    if (fresh.length > 0) probes.push(new WritableProbe(fresh, system.credentials, trial, { continuous: true }));
  };
  await follow();
  writer.resume(trial);
  const warm = performance.now();
  while (!writer.firstAckAfter(warm) || performance.now() - warm < 2_000) await sleep(20);

  let done = false;
  const following = (async () => {
    while (!done) {
      await follow().catch(() => undefined);
      await sleep(250);
    }
  })();
  const holders = watchHolders(client, clusterName, () => done);
  const startedAt = performance.now();
  let upgrade;
  let resized;
  if (kind === 'resize') resized = await resizeVolumes(clusters, clusterName, growMi, timeoutMs);
  else if (kind === 'rollout') {
    await clusters.patch(clusterName, { spec: { image } }, { namespace: NS, type: 'merge' });
    const tag = image.split(':').at(-1);
    await waitFor(
      `the rollout to ${image}`,
      async () => {
        const c = await clusters.get(clusterName, { namespace: NS });
        const rollout = c.status?.rollout;
        const versions = (c.status?.instances ?? []).map((i) => i.version);
        return (
          rollout?.phase === 'Idle' &&
          rollout.updated === 3 &&
          versions.length === 3 &&
          versions.every((v) => (tag.includes('.') ? v === tag : v?.startsWith(`${tag}.`)))
        );
      },
      timeoutMs,
      250,
    );
  } else if (kind === 'major') {
    // A major upgrade to the image's major: offline by design, so its gap is the downtime.
    const to = Number(image.split(':').at(-1));
    await clusters.patch(
      clusterName,
      {
        metadata: { annotations: { [ANNOTATION.allowMajorUpgrade]: String(to) } },
        spec: { postgresVersion: to, image },
      },
      { namespace: NS, type: 'merge' },
    );
    upgrade = await waitFor(
      `the major upgrade to ${to}`,
      async () => {
        const status = (await clusters.get(clusterName, { namespace: NS })).status?.majorUpgrade;
        if (status?.phase === 'Failed' || status?.phase === 'CheckFailed') throw new Error(status.message);
        return status?.phase === 'Succeeded' && status.to === to ? status : undefined;
      },
      timeoutMs,
      250,
    );
  } else {
    await clusters.patch(
      clusterName,
      { metadata: { annotations: { [ANNOTATION.switchover]: '*' } } },
      { namespace: NS, type: 'merge' },
    );
    await waitFor(
      'the switchover',
      async () => !(await clusters.get(clusterName, { namespace: NS })).metadata?.annotations?.[ANNOTATION.switchover],
      timeoutMs,
      100,
    );
  }
  const endedAt = performance.now();
  await system.waitHealthy();
  // Writes flowing on the new primary for a second, so the gap at the end is closed.
  const settle = performance.now();
  while (!writer.firstAckAfter(settle) || performance.now() - settle < 1_000) await sleep(20);
  const to = performance.now();
  done = true;
  await following;
  await writer.pause();
  for (const probe of probes) await probe.stop();
  const after = await system.primary();
  const holderLog = await holders;
  const changes = holderLog.length - 1;
  const clientTimes = writer.acksOf(trial).map((a) => a.at);
  const since = (ms) => round1(ms - startedAt);
  const dbTimes = probes.flatMap((p) => p.acks.map((a) => a.at)).sort((a, b) => a - b);
  const result = {
    kind,
    trial,
    ok: true,
    ...(kind === 'rollout' || kind === 'major' ? { image } : {}),
    ...(resized ?? {}),
    ...(upgrade
      ? {
          downtimeSeconds: upgrade.downtimeSeconds,
          pgUpgradeSeconds: upgrade.pgUpgradeSeconds,
          upgradeMessage: upgrade.message,
        }
      : {}),
    from: before.name,
    to: after.name,
    totalMs: round1(endedAt - startedAt),
    clientGapMs: round1(longestGap(clientTimes, startedAt, to)),
    dbGapMs: round1(longestGap(dbTimes, startedAt, to)),
    primaryChanges: changes,
    clientGapStartMs: since(gapStart(clientTimes, startedAt, to)),
    primaryChangedAtMs: holderLog.slice(1).map((h) => since(h.at)),
    podsReplacedAtMs: Object.fromEntries(replaced.map((r) => [r.name, since(r.at)])),
    ...(await lostReport(writer, trial, after.address, system.credentials, startedAt)),
  };
  const what = resized ? ` to ${resized.size} (filesystems ${resized.filesystemsMi.join(', ')} MiB)` : ` to ${image}`;
  log(
    `  ${kind} trial ${trial}${kind === 'switchover' ? '' : what}: ${before.name} → ${after.name}; ` +
      (upgrade ? `downtime (operator) ${upgrade.downtimeSeconds} s, pg_upgrade ${upgrade.pgUpgradeSeconds} s; ` : '') +
      `${(result.totalMs / 1000).toFixed(1)} s; longest write gap client ${(result.clientGapMs / 1000).toFixed(2)} s, ` +
      `database ${(result.dbGapMs / 1000).toFixed(2)} s, the client's from ${(result.clientGapStartMs / 1000).toFixed(1)} s; ` +
      `${changes} change(s) of primary${changes ? ` at ${result.primaryChangedAtMs.map((t) => (t / 1000).toFixed(1)).join(', ')} s` : ''}; ` +
      `Pods replaced at ${
        Object.entries(result.podsReplacedAtMs)
          .map(([n, t]) => `${n} ${(t / 1000).toFixed(1)} s`)
          .join(', ') || '-'
      }; ` +
      `${result.acked} acked, ${result.lost} lost`,
  );
  return result;
}

/**
 * Raises the set's data volume request by `growMi` and waits until the operator reports every claim
 * done (PersistentVolumeResizing False) and every instance's filesystem, as its agent reads it, has
 * the new size (ext4 keeps a few percent for itself).
 */
async function resizeVolumes(clusters, clusterName, growMi, timeoutMs) {
  const current = await clusters.get(clusterName, { namespace: NS });
  const [set, ...others] = current.spec.instances;
  const size = `${Math.ceil(quantityValue(set.dataVolumeClaimSpec.resources.requests.storage) / 2 ** 20) + growMi}Mi`;
  const bytes = quantityValue(size);
  await clusters.patch(
    clusterName,
    {
      spec: {
        instances: [
          { ...set, dataVolumeClaimSpec: { ...set.dataVolumeClaimSpec, resources: { requests: { storage: size } } } },
          ...others,
        ],
      },
    },
    { namespace: NS, type: 'merge' },
  );
  const status = await waitFor(
    `every data volume grown to ${size}`,
    async () => {
      const c = await clusters.get(clusterName, { namespace: NS });
      const resizing = c.status?.conditions?.find((x) => x.type === 'PersistentVolumeResizing');
      if (resizing?.reason === 'ResizeFailed' || resizing?.reason === 'ResizeRefused')
        throw new Error(resizing.message);
      const grown = (c.status?.instances ?? []).every((i) => (i.dataVolume?.sizeBytes ?? 0) >= bytes * 0.9);
      return resizing?.status === 'False' && grown ? c.status : undefined;
    },
    timeoutMs,
    250,
  );
  return { size, filesystemsMi: status.instances.map((i) => Math.round(i.dataVolume.sizeBytes / 2 ** 20)) };
}
