import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { InvalidError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import { z } from 'zod';
import { defineResource } from '../src/index.js';

const run = promisify(execFile);

const Gizmo = defineResource({
  group: 'api-test.kanri.dev',
  kind: 'Gizmo',
  shortNames: ['gz'],
  description: 'A Gizmo is a thing the tests define.',
  versions: {
    v1: {
      spec: z.object({
        size: z.number().int().min(1).describe('How big the gizmo is, in units.'),
        color: z.enum(['red', 'green']),
        replicas: z.number().int().min(0).default(1),
        range: z
          .object({ min: z.number().int(), max: z.number().int() })
          .meta({ 'x-kubernetes-validations': [{ rule: 'self.min <= self.max', message: 'min must not exceed max' }] })
          .optional(),
      }),
      status: z.object({ ready: z.boolean().optional(), replicas: z.number().int().optional() }),
      printerColumns: [{ name: 'Color', type: 'string', jsonPath: '.spec.color' }],
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' },
    },
  },
});
type Gizmo = typeof Gizmo.$object;

describe('defineResource against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(Gizmo.crd);
    await waitFor('the Gizmo CRD to be served', () =>
      client.resource(Gizmo.apiVersion, Gizmo.kind).list({ namespace: 'default' }),
    );
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  const gizmos = () => client.resource<Gizmo>(Gizmo.apiVersion, Gizmo.kind);
  const rejection = async (spec: unknown) => {
    const error = await gizmos()
      .create({
        metadata: { name: `bad-${Math.random().toString(36).slice(2, 8)}`, namespace: 'default' },
        spec,
      } as Gizmo)
      .catch((e) => e);
    assert.ok(error instanceof InvalidError, `rejected as invalid: ${error}`);
    return error;
  };

  it('accepts a valid object and applies defaults', async () => {
    const created = await gizmos().create({
      metadata: { name: 'good', namespace: 'default' },
      spec: { size: 2, color: 'red' },
    } as Gizmo);
    assert.equal(created.spec.replicas, 1);
  });

  it('rejects a wrong type, a missing field and a violated CEL rule, naming the field', async () => {
    const wrongType = await rejection({ size: 'big', color: 'red' });
    assert.match(wrongType.message, /spec\.size: Invalid value: "string": spec\.size in body must be of type integer/);
    const missing = await rejection({ size: 1 });
    assert.match(missing.message, /spec\.color: Required value/);
    const cel = await rejection({ size: 1, color: 'green', range: { min: 5, max: 1 } });
    assert.match(cel.message, /spec\.range: Invalid value: "object": min must not exceed max/);
    const notInEnum = await rejection({ size: 1, color: 'blue' });
    assert.match(notInEnum.message, /spec\.color: Unsupported value: "blue"/);
  });

  it('serves descriptions to kubectl explain, printer columns to kubectl get, and the scale subresource', async () => {
    const kubectl = cp.binaries.kubectl ?? 'kubectl';
    const env = { ...process.env, KUBECONFIG: cp.kubeconfigPath };
    const explained = await waitFor('kubectl explain to know the field', async () => {
      const { stdout } = await run(kubectl, ['explain', 'gizmos.spec.size'], { env });
      return stdout.includes('How big the gizmo is') ? stdout : '';
    });
    assert.match(explained, /How big the gizmo is, in units\./);
    const { stdout: kind } = await run(kubectl, ['explain', 'gz'], { env });
    assert.match(kind, /A Gizmo is a thing the tests define\./);
    const { stdout: table } = await run(kubectl, ['get', 'gz', 'good', '-n', 'default'], { env });
    assert.match(table, /COLOR/);
    assert.match(table, /good\s+red/);
    await run(kubectl, ['scale', 'gz/good', '-n', 'default', '--replicas=3'], { env });
    assert.equal((await gizmos().get('good', { namespace: 'default' })).spec.replicas, 3);
  });
});
