/**
 * Says so when a cluster's Pods wait on an image their nodes cannot get: `Ready` and
 * `Progressing` False with reason `ImageUnavailable`, naming the image and the tags the nodes have
 * (image-availability.ts), and a Warning Event whenever that changes. Without this, an instance
 * that never starts reads only "no report yet".
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster, PostgresClusterStatus } from '../../api/postgres-cluster.js';
import type { StepOutcome } from '../step-outcome.js';
import { imageFailures, imageUnavailableHeads, imageUnavailableMessage } from './image-availability.js';

export const IMAGE_UNAVAILABLE = 'ImageUnavailable';

/**
 * The conditions for `pods` (instances and the repo host) over `observed`, the status this pass
 * computed; nothing when no Pod waits on an image.
 */
export async function reportUnavailableImages(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'client' | 'event' | 'log'>,
  pods: readonly Pod[],
  observed: PostgresClusterStatus,
): Promise<StepOutcome> {
  const failures = imageFailures(pods);
  if (failures.length === 0) return {};
  const nodes: Record<string, Node> = {};
  for (const name of new Set(failures.flatMap((f) => (f.node ? [f.node] : [])))) {
    try {
      nodes[name] = await ctx.client.resource<Node & { apiVersion: string; kind: string }>('v1', 'Node').get(name);
    } catch (error) {
      // An install for one namespace cannot read Nodes: the message says so instead of the tags.
      ctx.log.debug({ node: name, err: error }, 'could not read the node of a Pod waiting on its image');
    }
  }
  const message = imageUnavailableMessage(failures, nodes);
  const previous = cluster.status?.conditions?.find((c) => c.type === 'Ready');
  // Once per change of which Pods wait on which image, not per pull retry.
  const said = previous?.reason === IMAGE_UNAVAILABLE ? (previous.message ?? '') : '';
  if (!imageUnavailableHeads(failures).every((head) => said.includes(`${head} (`)))
    await ctx.event('Warning', IMAGE_UNAVAILABLE, message);
  const summary = observed.conditions?.find((c) => c.type === 'Ready')?.message;
  const full = summary ? `${message}. ${summary}` : message;
  const generation = cluster.metadata?.generation;
  return {
    conditions: [
      { type: 'Ready', status: 'False', reason: IMAGE_UNAVAILABLE, message: full, observedGeneration: generation },
      {
        type: 'Progressing',
        status: 'False',
        reason: IMAGE_UNAVAILABLE,
        message: full,
        observedGeneration: generation,
      },
    ],
  };
}
