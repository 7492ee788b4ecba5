import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { postgresOperator } from '../definition.js';
import { type Observed, observedKey, policyProblem } from './policy-presence.js';

const expected = postgresOperator.policies();
const keyOf = (o: Record<string, unknown>) => observedKey(String(o.kind), (o.metadata as { name: string }).name);
/** Everything installed as the API server returns it: with its defaults filled in. */
const installed = () =>
  new Map<string, Observed>(
    expected.map((o) => {
      const spec = structuredClone(o.spec) as Record<string, unknown>;
      const constraints = spec.matchConstraints as Record<string, unknown> | undefined;
      if (constraints) {
        constraints.matchPolicy = 'Equivalent';
        constraints.namespaceSelector = {};
        constraints.objectSelector ??= {};
      }
      return [keyOf(o), { object: { ...o, spec, metadata: { ...(o.metadata as object), uid: 'x' } } }];
    }),
  );
const podPolicy = expected.find((o) => o.kind === 'ValidatingAdmissionPolicy') as Record<string, unknown>;

describe('policyProblem', () => {
  it('finds none when every policy and binding is installed as the operator makes them', () => {
    assert.equal(policyProblem(expected, installed(), false), undefined);
  });

  it('names a missing policy, or a missing binding', () => {
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
      const observed = installed();
      const name = (podPolicy.metadata as { name: string }).name;
      observed.set(observedKey(kind, name), 'missing');
      const problem = policyProblem(expected, observed, false);
      assert.equal(problem?.reason, 'PolicyMissing');
      assert.match(problem?.message ?? '', new RegExp(`${kind} ${name} is not installed: no instance Pods`));
    }
  });

  it('refuses an edited or older copy: a validation changed, a binding that only warns or narrows', () => {
    const weakened = installed();
    const copy = structuredClone((weakened.get(keyOf(podPolicy)) as { object: Record<string, unknown> }).object);
    (copy.spec as { validations: { expression: string }[] }).validations[0] = { expression: 'true' };
    weakened.set(keyOf(podPolicy), { object: copy });
    assert.equal(policyProblem(expected, weakened, false)?.reason, 'PolicyOutdated');
    const binding = expected.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding') as Record<string, unknown>;
    for (const change of [
      { validationActions: ['Warn'] },
      { matchResources: { namespaceSelector: { matchLabels: { x: 'y' } } } },
    ]) {
      const observed = installed();
      observed.set(keyOf(binding), { object: { ...binding, spec: { ...(binding.spec as object), ...change } } });
      assert.equal(policyProblem(expected, observed, false)?.reason, 'PolicyOutdated', JSON.stringify(change));
    }
  });

  it('what it may not read stops it, unless the installer vouches; what it reads and finds missing stops it still', () => {
    const forbidden = new Map<string, Observed>(expected.map((o) => [keyOf(o), 'forbidden']));
    assert.equal(policyProblem(expected, forbidden, false)?.reason, 'PolicyUnreadable');
    assert.match(policyProblem(expected, forbidden, false)?.message ?? '', /KANRI_ADMISSION_POLICIES=installed/);
    assert.equal(policyProblem(expected, forbidden, true), undefined);
    forbidden.set(keyOf(podPolicy), 'missing');
    assert.equal(policyProblem(expected, forbidden, true)?.reason, 'PolicyMissing');
  });

  it('says so when the API server serves no admission policies (before Kubernetes 1.30)', () => {
    const old = new Map<string, Observed>(expected.map((o) => [keyOf(o), 'unserved']));
    assert.match(policyProblem(expected, old, true)?.message ?? '', /needs Kubernetes 1\.30 or later/);
  });
});
