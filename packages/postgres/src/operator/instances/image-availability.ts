/**
 * Which of a cluster's Pods wait on an image their node cannot get, and what to tell the user:
 * the image, the kubelet's reason, and the tags of that image's repository the nodes do have (so
 * "use postgresVersion 16" is one look away). Pure: the Nodes are read by the caller
 * (image-availability-actions.ts).
 */
import type { Node, Pod } from 'kubernetes-types/core/v1.js';

/** Waiting reasons of a container whose image the node does not have and cannot pull. */
const IMAGE_UNAVAILABLE = /^(ErrImagePull|ImagePullBackOff|InvalidImageName|ErrImageNeverPull)$/;

/** Longest part of the kubelet's message kept: a registry's error can run to a screenful. */
const KUBELET_MESSAGE_CHARS = 200;

const shorten = (text: string) =>
  text.length > KUBELET_MESSAGE_CHARS ? `${text.slice(0, KUBELET_MESSAGE_CHARS - 1)}…` : text;

/** One container that waits on an image it cannot get. */
export interface ImageFailure {
  readonly pod: string;
  readonly node?: string;
  readonly image: string;
  readonly reason: string;
  readonly message: string;
}

/**
 * The containers of `pods` waiting on an image they cannot get, in Pod order.
 *
 * @example
 * ```ts
 * imageFailures([pod]); // [{ pod: 'db-i-0', node: 'real-node-1', image: 'ghcr.io/kanri-dev/postgres:13', reason: 'ErrImagePull', message: '…' }]
 * ```
 */
export function imageFailures(pods: readonly Pod[]): ImageFailure[] {
  return [...pods]
    .filter((pod) => !pod.metadata?.deletionTimestamp)
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .flatMap((pod) => {
      const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
      return statuses.flatMap((status) => {
        const waiting = status.state?.waiting;
        if (!waiting || !IMAGE_UNAVAILABLE.test(waiting.reason ?? '')) return [];
        return [
          {
            pod: pod.metadata?.name ?? '',
            ...(pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
            image: status.image,
            reason: waiting.reason ?? '',
            message: shorten(waiting.message ?? ''),
          },
        ];
      });
    });
}

/**
 * The repository of an image reference: without its digest and its tag.
 *
 * @example
 * ```ts
 * imageRepository('localhost:5000/kanri/postgres:17@sha256:ab…'); // 'localhost:5000/kanri/postgres'
 * ```
 */
export function imageRepository(image: string): string {
  const name = image.split('@')[0] ?? image;
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}

/** Tags in version order: `15.9` before `15.18`, numbers before words. */
const byVersion = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

/** The tags of `repository` among a Node's images (kubelet's `status.images`), sorted as numbers where they are. */
export function tagsOnNode(node: Node, repository: string): string[] {
  const tags = new Set<string>();
  for (const image of node.status?.images ?? []) {
    for (const name of image.names ?? []) {
      if (name.startsWith(`${repository}:`) && !name.includes('@')) tags.add(name.slice(repository.length + 1));
    }
  }
  return [...tags].sort(byVersion);
}

/**
 * What the `Ready` and `Progressing` conditions and the Warning Event say about `failures`: per
 * image, the Pods waiting on it and the kubelet's reason, then the tags of its repository each
 * node has. `nodes` holds the Nodes that could be read, by name; one that could not is named so.
 *
 * @example
 * ```ts
 * imageUnavailableMessage(failures, { 'real-node-1': node });
 * // 'image ghcr.io/kanri-dev/postgres:13 is not available to db-i-0 on real-node-1 (ErrImagePull: …);
 * //  the nodes have ghcr.io/kanri-dev/postgres:14, :15, :16, :17 (spec.postgresVersion 14, 15, 16, 17)'
 * ```
 */
export function imageUnavailableMessage(
  failures: readonly ImageFailure[],
  nodes: Readonly<Record<string, Node>>,
): string {
  const byImage = new Map<string, ImageFailure[]>();
  for (const failure of failures) byImage.set(failure.image, [...(byImage.get(failure.image) ?? []), failure]);
  return [...byImage.entries()]
    .map(([image, waiting]) => {
      const [first] = waiting as [ImageFailure];
      const kubelet = `${first.reason}${first.message ? `: ${first.message}` : ''}`;
      return `${imageUnavailableHead(image, waiting)} (${kubelet}); ${available(image, waiting, nodes)}`;
    })
    .join('; ');
}

/**
 * The part of the message that names `image` and the Pods waiting on it, without the kubelet's
 * words (which alternate between ErrImagePull and its back-off): what a Warning Event is keyed on.
 */
export function imageUnavailableHead(image: string, waiting: readonly ImageFailure[]): string {
  return `image ${image} is not available to ${waiting.map((f) => `${f.pod}${f.node ? ` on ${f.node}` : ''}`).join(', ')}`;
}

/** The heads of every image of `failures` (see imageUnavailableHead). */
export function imageUnavailableHeads(failures: readonly ImageFailure[]): string[] {
  const images = [...new Set(failures.map((f) => f.image))];
  return images.map((image) =>
    imageUnavailableHead(
      image,
      failures.filter((f) => f.image === image),
    ),
  );
}

/** What the nodes of `waiting` have of `image`'s repository. */
function available(image: string, waiting: readonly ImageFailure[], nodes: Readonly<Record<string, Node>>): string {
  const repository = imageRepository(image);
  const names = [...new Set(waiting.flatMap((f) => (f.node ? [f.node] : [])))];
  const unread = names.filter((n) => !nodes[n]);
  const tags = [...new Set(names.flatMap((n) => (nodes[n] ? tagsOnNode(nodes[n], repository) : [])))].sort(byVersion);
  const unreadNote = unread.length > 0 ? ` (node ${unread.join(', ')} could not be read)` : '';
  if (tags.length === 0) return `the nodes have no image of ${repository}${unreadNote}`;
  const majors = tags.filter((t) => /^\d+$/.test(t));
  const versions = majors.length > 0 ? ` (spec.postgresVersion ${majors.join(', ')})` : '';
  return `the nodes have ${repository}:${tags.join(', :')}${versions}${unreadNote}`;
}
