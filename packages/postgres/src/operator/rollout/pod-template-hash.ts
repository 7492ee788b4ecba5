/**
 * What makes an instance's Pod up to date: a hash of the Pod it would get now in its steady state
 * (bootstrap `basebackup`, no clone source), so that what only matters at a first start (initdb,
 * a restore id) never counts as a change, plus the rolling-restart request. Pure.
 */
import { createHash } from 'node:crypto';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ANNOTATION } from '../../contract/index.js';
import { instancePod } from '../builders/instance-pod.js';

export interface TemplateInstance {
  readonly name: string;
  readonly set: string;
  readonly setIndex: number;
}

/**
 * @example
 * ```ts
 * podTemplateHash(cluster, { name: 'hippo-i-0', set: 'i', setIndex: 0 }); // '5f0c…' (16 hex digits)
 * ```
 */
export function podTemplateHash(cluster: PostgresCluster, instance: TemplateInstance): string {
  const pod = instancePod({ cluster, ...instance, bootstrap: 'basebackup' });
  const restart = cluster.metadata?.annotations?.[ANNOTATION.restart] ?? '';
  return createHash('sha256')
    .update(JSON.stringify([pod.spec, restart]))
    .digest('hex')
    .slice(0, 16);
}

/** `pod` with its template hash annotated: every instance Pod the operator creates carries it. */
export function withTemplateHash<P extends { metadata?: { annotations?: Record<string, string> } }>(
  pod: P,
  cluster: PostgresCluster,
  instance: TemplateInstance,
): P {
  const annotations = {
    ...pod.metadata?.annotations,
    [ANNOTATION.podTemplateHash]: podTemplateHash(cluster, instance),
  };
  return { ...pod, metadata: { ...pod.metadata, annotations } };
}
