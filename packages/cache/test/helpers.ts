/** Shared helpers for the cache's integration tests. */
import type { KubeObject, ResourceClient } from '@kanri/client';
import { request } from 'undici';

export { waitFor } from '@kanri/testenv';

/** `namespace/name → resourceVersion` of what a fresh list shows: the truth a cache must converge to. */
export async function freshSnapshot(
  resource: ResourceClient<KubeObject>,
  namespace: string,
): Promise<Map<string, string>> {
  const snapshot = new Map<string, string>();
  for await (const o of resource.listAll({ namespace }))
    snapshot.set(`${o.metadata?.namespace}/${o.metadata?.name}`, o.metadata?.resourceVersion ?? '');
  return snapshot;
}

export function snapshotOf(objects: readonly KubeObject[]): Map<string, string> {
  return new Map(
    objects.map((o) => [`${o.metadata?.namespace}/${o.metadata?.name}`, o.metadata?.resourceVersion ?? '']),
  );
}

/** Compacts etcd at its current revision through its HTTP gateway, so older resource versions are gone. */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const range = await request(`${etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('/').toString('base64') }),
  });
  const revision = Number(((await range.body.json()) as { header: { revision: string } }).header.revision);
  const compaction = await request(`${etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision, physical: true }),
  });
  await compaction.body.text();
  if (compaction.statusCode !== 200) throw new Error(`etcd compaction failed with ${compaction.statusCode}`);
  return revision;
}

/**
 * Waits for an informer's first sync with a deadline, so a cache that never syncs fails the test
 * with its last error instead of hanging it.
 */
export async function synced(
  informer: { waitForSync(signal?: AbortSignal): Promise<void>; readonly status: { readonly lastError: unknown } },
  timeoutMs = 30_000,
): Promise<void> {
  try {
    await informer.waitForSync(AbortSignal.timeout(timeoutMs));
  } catch (error) {
    const last = informer.status.lastError;
    throw new Error(
      `the informer did not sync within ${timeoutMs} ms; last error: ${last instanceof Error ? last.message : 'none'}`,
      { cause: error },
    );
  }
}
