import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import {
  imageFailures,
  imageRepository,
  imageUnavailableHeads,
  imageUnavailableMessage,
  tagsOnNode,
} from './image-availability.js';
import { instancePodChanged } from './pod-predicate.js';

const REPO = 'ghcr.io/kanri-dev/postgres';

const pod = (name: string, image: string, reason?: string, node = 'real-node-1'): Pod => ({
  metadata: { name },
  spec: { nodeName: node, containers: [{ name: 'postgres', image }] },
  status: {
    containerStatuses: [
      {
        name: 'postgres',
        image,
        imageID: '',
        ready: false,
        restartCount: 0,
        state: reason
          ? { waiting: { reason, message: `failed to pull and unpack image "${image}": not found` } }
          : { running: {} },
      },
    ],
  },
});

const node = (name: string, names: string[][]): Node => ({
  metadata: { name },
  status: { images: names.map((n) => ({ names: n, sizeBytes: 1 })) },
});

describe('imageFailures', () => {
  it('finds containers waiting on an image they cannot get, and nothing else', () => {
    const failures = imageFailures([
      pod('db-i-1', `${REPO}:13`, 'ImagePullBackOff'),
      pod('db-i-0', `${REPO}:13`, 'ErrImagePull'),
      pod('db-i-2', `${REPO}:16`),
      pod('db-i-3', `${REPO}:16`, 'CrashLoopBackOff'),
      pod('db-i-4', `${REPO}:16`, 'ContainerCreating'),
    ]);
    assert.deepEqual(
      failures.map((f) => [f.pod, f.reason, f.node, f.image]),
      [
        ['db-i-0', 'ErrImagePull', 'real-node-1', `${REPO}:13`],
        ['db-i-1', 'ImagePullBackOff', 'real-node-1', `${REPO}:13`],
      ],
    );
  });

  it('leaves out a Pod being deleted', () => {
    const leaving = {
      ...pod('db-i-0', `${REPO}:13`, 'ErrImagePull'),
      metadata: { name: 'db-i-0', deletionTimestamp: 'x' },
    };
    assert.deepEqual(imageFailures([leaving]), []);
  });
});

describe('imageRepository and tagsOnNode', () => {
  it('strips the tag and digest, not a registry port', () => {
    assert.equal(imageRepository(`${REPO}:17`), REPO);
    assert.equal(imageRepository('localhost:5000/pg:17@sha256:ab'), 'localhost:5000/pg');
    assert.equal(imageRepository('localhost:5000/pg'), 'localhost:5000/pg');
  });

  it("lists the repository's tags in version order, without digests or other repositories", () => {
    const n = node('n', [
      [`${REPO}@sha256:aa`, `${REPO}:17`],
      [`${REPO}:15.20`, `${REPO}:15.9`, `${REPO}:14`],
      [`${REPO}-operator:0.1.0`],
    ]);
    assert.deepEqual(tagsOnNode(n, REPO), ['14', '15.9', '15.20', '17']);
  });
});

describe('imageUnavailableMessage', () => {
  const failures = imageFailures([
    pod('db-i-0', `${REPO}:13`, 'ErrImagePull'),
    pod('db-i-1', `${REPO}:13`, 'ErrImagePull', 'real-node-2'),
  ]);

  it('names the image, the Pods and nodes, the reason, and the majors the nodes have', () => {
    const message = imageUnavailableMessage(failures, {
      'real-node-1': node('real-node-1', [[`${REPO}:16`], [`${REPO}:14`]]),
      'real-node-2': node('real-node-2', [[`${REPO}:16`], [`${REPO}:17`]]),
    });
    assert.equal(
      message,
      `image ${REPO}:13 is not available to db-i-0 on real-node-1, db-i-1 on real-node-2 (ErrImagePull: failed to pull and unpack image "${REPO}:13": not found); the nodes have ${REPO}:14, :16, :17 (spec.postgresVersion 14, 16, 17)`,
    );
  });

  it('says when the nodes have no image of the repository, and which node could not be read', () => {
    const message = imageUnavailableMessage(failures, { 'real-node-1': node('real-node-1', [['other:1']]) });
    assert.match(message, new RegExp(`the nodes have no image of ${REPO} \\(node real-node-2 could not be read\\)$`));
  });
});

describe('imageUnavailableHeads', () => {
  it('names each image and the Pods waiting on it, the same between pull retries, different when a Pod joins', () => {
    const retry = imageUnavailableHeads(imageFailures([pod('db-i-0', `${REPO}:13`, 'ImagePullBackOff')]));
    assert.deepEqual(retry, imageUnavailableHeads(imageFailures([pod('db-i-0', `${REPO}:13`, 'ErrImagePull')])));
    assert.deepEqual(retry, [`image ${REPO}:13 is not available to db-i-0 on real-node-1`]);
    const joined = imageUnavailableHeads(
      imageFailures([pod('db-i-0', `${REPO}:13`, 'ErrImagePull'), pod('db-i-1', `${REPO}:13`, 'ErrImagePull')]),
    );
    assert.notDeepEqual(joined, retry);
  });

  it('shortens a long kubelet message, marking the cut', () => {
    const long = pod('db-i-0', `${REPO}:13`, 'ErrImagePull');
    const waiting = long.status?.containerStatuses?.[0]?.state?.waiting;
    if (waiting) waiting.message = 'x'.repeat(500);
    const [failure] = imageFailures([long]);
    assert.equal(failure?.message.length, 200);
    assert.ok(failure?.message.endsWith('…'));
  });
});

describe('instancePodChanged on image waits', () => {
  it('wakes the controller when a container starts or stops waiting on its image, not between pull retries', () => {
    const now = Date.now();
    assert.equal(instancePodChanged(pod('a', `${REPO}:13`), pod('a', `${REPO}:13`, 'ErrImagePull'), now), true);
    assert.equal(
      instancePodChanged(pod('a', `${REPO}:13`, 'ErrImagePull'), pod('a', `${REPO}:13`, 'ImagePullBackOff'), now),
      false,
    );
  });
});
