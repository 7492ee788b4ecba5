import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { nodeBaseImage } from '../versions.js';
import { archiveStem } from './build-images.js';
import { BASE_DIGEST_LABEL, baseDigest, NODE_BASE_DOCKERFILE } from './node-base-image.js';

describe('image names and digests', () => {
  it('names archives after the tag, with only file-safe characters, one tag apart from another', () => {
    assert.equal(archiveStem('ghcr.io/kanri-dev/postgres:15'), 'ghcr.io_kanri-dev_postgres_15');
    assert.notEqual(archiveStem('a/b:1'), archiveStem('a/b:15'));
  });

  it('digests the base image from its pins and Dockerfile, so changing either rebuilds it', () => {
    const dockerfile = readFileSync(NODE_BASE_DOCKERFILE, 'utf8');
    const digest = baseDigest(nodeBaseImage, dockerfile);
    assert.match(digest, /^[0-9a-f]{64}$/);
    assert.notEqual(baseDigest(nodeBaseImage, `${dockerfile}\n`), digest);
    const otherNode = {
      ...nodeBaseImage,
      node: { ...nodeBaseImage.node, version: '20.20.3' },
    } as unknown as typeof nodeBaseImage;
    assert.notEqual(baseDigest(otherNode, dockerfile), digest);
    assert.match(BASE_DIGEST_LABEL, /^dev\.kanri\./);
  });

  it('builds the base from the Node the pins name, as the official image’s uid 1000 `node` user', () => {
    const dockerfile = readFileSync(NODE_BASE_DOCKERFILE, 'utf8');
    assert.match(dockerfile, /^FROM scratch$/m);
    assert.match(dockerfile, /useradd --uid 1000 --gid node/);
    assert.match(dockerfile, /test "\$\(node --version\)" = "v\$\{NODE_VERSION\}"/);
    assert.equal(nodeBaseImage.tag, 'docker.io/library/node:20-bookworm-slim');
  });
});
