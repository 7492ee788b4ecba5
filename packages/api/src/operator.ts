/**
 * An operator as one value: its resources, its controllers and what it runs as. Packaging (CRDs,
 * RBAC, manifests, chart), `kanri dev` and the operator's own `main` all read this one
 * definition, so what is installed always matches what runs.
 */
import { type ControllerDefinition, type KubeObject, Manager, type ManagerOptions } from '@kanri/runtime';
import type { CustomResourceDefinitionObject, ResourceDefinition } from './define-resource.js';
import { managerOptionsFromEnv } from './packaging/runtime-env.js';
import { deriveRbac, type PolicyRule } from './rbac.js';

export interface OperatorInput {
  /** DNS-1123 label. Names the Deployment, ServiceAccount, roles, Lease and field managers. */
  readonly name: string;
  /** Container image of the operator. Default `<name>:latest`. */
  readonly image?: string;
  /** Namespace the operator runs in. Default `<name>-system`. */
  readonly namespace?: string;
  /** The custom resources whose CRDs the operator installs. */
  // biome-ignore lint/suspicious/noExplicitAny: definitions of any version map are accepted
  readonly resources?: readonly ResourceDefinition<any>[];
  readonly controllers: readonly ControllerDefinition<never>[];
  /** Watch one namespace only: RBAC becomes Roles in that namespace. */
  readonly watchNamespace?: string;
  /** Rules beyond what the controllers declare (for example reading a Secret by name). */
  readonly extraRules?: readonly PolicyRule[];
  /** Plurals the simple English rules get wrong, keyed `group/Kind`. */
  readonly plurals?: Readonly<Record<string, string>>;
}

export interface OperatorDefinition extends Required<Omit<OperatorInput, 'watchNamespace'>> {
  readonly watchNamespace: string | undefined;
  /** The CRDs of every declared resource. */
  crds(): CustomResourceDefinitionObject[];
  /** ServiceAccount, roles and bindings derived from the controllers. */
  rbac(): Record<string, unknown>[];
  /**
   * Creates a manager with every controller added and leader election on, in the namespace the
   * Pod runs in (`POD_NAMESPACE`, set by the generated Deployment) or the operator's namespace;
   * `KANRI_LEADER_ELECTION=false` turns it off and `KANRI_BIND_ADDRESS` moves the health and
   * metrics server (both set by the generated Deployment from its values).
   */
  manager(options?: ManagerOptions): Promise<Manager>;
}

const DNS_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * Defines an operator.
 *
 * @example
 * ```ts
 * export default defineOperator({
 *   name: 'website-operator',
 *   image: 'ghcr.io/example/website-operator:0.1.0',
 *   resources: [Website],
 *   controllers: [websiteController],
 * });
 * // main.ts
 * const manager = await operator.manager();
 * await manager.start();
 * ```
 */
export function defineOperator(input: OperatorInput): OperatorDefinition {
  if (!DNS_LABEL.test(input.name)) {
    throw new Error(
      `defineOperator: name "${input.name}" must be a DNS-1123 label (lower case letters, digits and '-', at most 63)`,
    );
  }
  if (input.controllers.length === 0) throw new Error(`defineOperator ${input.name}: controllers is empty`);
  const namespace = input.namespace ?? `${input.name}-system`;
  const definition: OperatorDefinition = {
    name: input.name,
    image: input.image ?? `${input.name}:latest`,
    namespace,
    resources: input.resources ?? [],
    controllers: input.controllers,
    watchNamespace: input.watchNamespace,
    extraRules: input.extraRules ?? [],
    plurals: input.plurals ?? {},
    crds: () => definition.resources.map((r) => r.crd),
    rbac: () =>
      deriveRbac(definition.controllers, {
        name: definition.name,
        namespace,
        ...(input.watchNamespace ? { watchNamespace: input.watchNamespace } : {}),
        extraRules: definition.extraRules,
        plurals: definition.plurals,
      }),
    async manager(options: ManagerOptions = {}) {
      const manager = await Manager.create({
        name: definition.name,
        ...(input.watchNamespace ? { namespace: input.watchNamespace } : {}),
        // Leader election on a Lease in POD_NAMESPACE, unless the Deployment turns it off.
        ...managerOptionsFromEnv(process.env, namespace),
        ...options,
      });
      for (const c of definition.controllers) manager.add(c as unknown as ControllerDefinition<KubeObject>);
      return manager;
    },
  };
  return definition;
}
