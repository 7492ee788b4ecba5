// Where the client's time after a fault goes between the database and the client: when the
// read-write Service's EndpointSlices first listed a ready address other than the old primary's.
// The time from there to the client's first write is kube-proxy's sync and the client's
// reconnect, the same machinery for every system; the time before it is the system's own.
import { setTimeout as sleep } from 'node:timers/promises';

/** The ready addresses of `slices` (EndpointSlice objects), sorted. Pure. */
export function readyAddresses(slices) {
  return slices
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready !== false)
    .flatMap((e) => e.addresses ?? [])
    .sort();
}

/** The Service of `namespace` whose ClusterIP is `ip`, by name. */
export async function serviceAt(client, namespace, ip) {
  const services = await client.resource('v1', 'Service').list({ namespace });
  const service = services.items.find((s) => s.spec?.clusterIP === ip);
  if (!service) throw new Error(`no Service in ${namespace} has ClusterIP ${ip}`);
  return service.metadata.name;
}

/**
 * Polls the EndpointSlices of Service `name` every `everyMs` until stopped; `firstOther(since,
 * oldAddress)` is the first time (performance.now()) after `since` they listed a ready address other
 * than `oldAddress` (and not it), or undefined.
 */
export function watchEndpoints(client, namespace, name, { everyMs = 50 } = {}) {
  const seen = [];
  let stopped = false;
  const slices = client.resource('discovery.k8s.io/v1', 'EndpointSlice');
  const loop = (async () => {
    while (!stopped) {
      try {
        const list = await slices.list({ namespace, labelSelector: `kubernetes.io/service-name=${name}` });
        seen.push({ at: performance.now(), addresses: readyAddresses(list.items) });
      } catch {
        // The API server is busy or restarting: the next poll tells.
      }
      await sleep(everyMs);
    }
  })();
  return {
    firstOther(since, oldAddress) {
      return seen.find((s) => s.at > since && s.addresses.length > 0 && !s.addresses.includes(oldAddress))?.at;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
