import assert from 'node:assert/strict';
import { it } from 'node:test';
import { main } from './main.js';
import { buildChildren } from './operator.js';

it('builds a ConfigMap, a Deployment and a Service for a Website', () => {
  const children = buildChildren({ metadata: { name: 'site' }, spec: { html: '<p>x</p>', replicas: 3 } });
  assert.deepEqual(
    children.map((c) => `${c.kind}/${c.metadata?.name}`),
    ['ConfigMap/site-html', 'Deployment/site', 'Service/site'],
  );
  assert.equal((children[1] as { spec: { replicas: number } }).spec.replicas, 3);
});

it('example 03 runs the Website operator until the site is Ready', async () => {
  const status = await main();
  const ready = status?.conditions?.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'True');
  assert.equal(ready?.reason, 'Available');
  assert.equal(ready?.message, '2/2 replicas ready');
  assert.equal(status?.url, 'http://hello.default.svc');
  assert.equal(status?.observedGeneration, 1);
});
