/**
 * An operator as one value: its resources, its controllers and what it runs as. Packaging (CRDs,
 * RBAC, manifests, chart), `kanri dev` and the operator's own `main` all read this one
 * definition, so what is installed always matches what runs.
 */
import {
  type CacheOptions,
  type ControllerDefinition,
  crdDeletionGuardRules,
  crdDeletionGuardWebhook,
  type KubeObject,
  Manager,
  type ManagerOptions,
} from '@kanri/runtime';
import type { CustomResourceDefinitionObject, ResourceDefinition } from './define-resource.js';
import { namedObjects, type Ownership, ownedWritesPolicies, serviceAccountUser } from './owned-writes-policy.js';
import {
  crdDeletionGuardFromEnv,
  managerOptionsFromEnv,
  WEBHOOK_PORT,
  watchNamespaceFromEnv,
} from './packaging/runtime-env.js';
import { deriveRbac, type ExplainedRole, explainRbac, type PolicyRule, type RbacOptions } from './rbac.js';

/** Where an install runs the operator: what its admission policies are keyed on. */
export interface OperatorInstall {
  /** The namespace the operator runs in. */
  readonly namespace: string;
  /** Its ServiceAccount's username, `system:serviceaccount:<namespace>:<name>`. */
  readonly username: string;
}

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
  /** Rules beyond what the controllers declare (for example reading a Secret by name), each best with its `reason`. */
  readonly extraRules?: readonly (PolicyRule & { readonly reason?: string })[];
  /**
   * Rules on cluster-scoped objects (reading a Pod's Node, say), each best with its `reason`: in the
   * ClusterRole, left out of an install for one namespace (its Roles could not grant them), so the
   * operator must cope without them there.
   */
  readonly clusterRules?: readonly (PolicyRule & { readonly reason?: string })[];
  /** Plurals the simple English rules get wrong, keyed `group/Kind`. */
  readonly plurals?: Readonly<Record<string, string>>;
  /**
   * Refuse deleting the operator's CRDs while custom resources of them exist (an admission webhook
   * served by the operator). Default: on when the operator has resources and watches the whole
   * cluster; a namespace-scoped operator cannot list cluster-wide, so it is off there.
   */
  readonly crdDeletionGuard?: boolean;
  /** What the manager's informers hold per kind (keep Secrets the operator does not own out of memory). */
  readonly cache?: CacheOptions;
  /**
   * Cluster-scoped admission objects installed with the operator: ValidatingAdmissionPolicies and
   * their bindings that narrow what RBAC cannot (what the operator's workloads may write). A
   * function gets the install (its namespace, its ServiceAccount's username), for policies keyed
   * on the operator's own identity.
   */
  readonly admissionPolicies?:
    | readonly Record<string, unknown>[]
    | ((install: OperatorInstall) => readonly Record<string, unknown>[]);
  /**
   * How the operator recognises what it owns: with it, the install narrows the operator's own
   * writes to those objects (owned-writes-policy.ts), so its cluster-wide RBAC is no
   * cluster-admin in effect.
   */
  readonly ownership?: Ownership;
}

/** What of an install changes the operator's RBAC. */
export interface RbacInstallOptions {
  readonly crdDeletionGuard?: boolean;
  /**
   * An install that watches one namespace: Roles there instead of ClusterRoles, and no CRD
   * deletion guard (a cluster-wide webhook). Default: the definition's `watchNamespace`.
   */
  readonly watchNamespace?: string;
}

export interface OperatorDefinition
  extends Required<Omit<OperatorInput, 'watchNamespace' | 'admissionPolicies' | 'ownership'>> {
  readonly watchNamespace: string | undefined;
  readonly ownership: Ownership | undefined;
  /** `policies()` of an install in the definition's namespace. */
  readonly admissionPolicies: readonly Record<string, unknown>[];
  /**
   * Every admission policy and binding an install applies: the definition's `admissionPolicies`,
   * then, with `ownership`, those that narrow the operator's own writes. Keyed on the operator's
   * ServiceAccount in `namespace` (default the definition's).
   */
  policies(options?: { readonly namespace?: string }): Record<string, unknown>[];
  /** The names of the ValidatingAdmissionPolicies `policies()` installs (each binding is named alike). */
  policyNames(): string[];
  /** The webhook's Service and ValidatingWebhookConfiguration (caBundle set by the running operator); empty without the guard. */
  webhookManifests(): Record<string, unknown>[];
  /** The CRDs of every declared resource. */
  crds(): CustomResourceDefinitionObject[];
  /**
   * ServiceAccount, roles and bindings derived from the controllers, with what the CRD deletion
   * guard needs when it is on. `{ crdDeletionGuard: false }` leaves the guard's rules out, for an
   * install that turns the guard off.
   */
  rbac(options?: RbacInstallOptions): Record<string, unknown>[];
  /** The roles `rbac()` writes, each rule with why the operator holds it (the README's table). */
  explainRbac(options?: RbacInstallOptions): ExplainedRole[];
  /**
   * Creates a manager with every controller added and leader election on, in the namespace the
   * Pod runs in (`POD_NAMESPACE`, set by the generated Deployment) or the operator's namespace;
   * `KANRI_LEADER_ELECTION=false` turns it off and `KANRI_BIND_ADDRESS` moves the health and
   * metrics server (both set by the generated Deployment from its values). In a cluster
   * (`POD_NAMESPACE` set) it serves the CRD deletion guard on {@link WEBHOOK_PORT} unless
   * `KANRI_CRD_DELETION_GUARD=false`.
   */
  manager(options?: ManagerOptions): Promise<Manager>;
}

export { WEBHOOK_PORT };

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
  const guard = (input.crdDeletionGuard ?? !input.watchNamespace) && (input.resources?.length ?? 0) > 0;
  const configurationName = `${input.name}-crd-deletion-guard`;
  const certificateSecret = `${input.name}-webhook-cert`;
  const service = { name: `${input.name}-webhook`, namespace };
  const crdNames = () => definition.resources.map((r) => r.crd.metadata.name);
  const guardRules = (on: boolean) => {
    if (!on) return { clusterRules: [], namespaceRules: [] };
    const rules = crdDeletionGuardRules({ crds: definition.crds() as never, configurationName, certificateSecret });
    const reason = (rule: PolicyRule) =>
      rule.resources[0] === 'validatingwebhookconfigurations'
        ? `the CRD deletion guard: sets the caBundle of its webhook ${configurationName}`
        : rule.resources[0] === 'secrets'
          ? `the CRD deletion guard: its serving certificate and CA, ${certificateSecret}(-ca) (create cannot be limited to a name)`
          : 'the CRD deletion guard: counts the custom resources left before a CRD may go';
    return {
      clusterRules: rules.clusterRules.map((r) => ({ ...r, reason: reason(r) })),
      namespaceRules: rules.namespaceRules.map((r) => ({ ...r, reason: reason(r) })),
    };
  };
  const policies = (ns: string) => {
    const install: OperatorInstall = { namespace: ns, username: serviceAccountUser(ns, input.name) };
    const declared =
      typeof input.admissionPolicies === 'function'
        ? input.admissionPolicies(install)
        : (input.admissionPolicies ?? []);
    const { namespaceRules } = guardRules(guard);
    const owned = input.ownership
      ? ownedWritesPolicies({
          operator: input.name,
          namespace: ns,
          ownership: input.ownership,
          ownGroups: [...new Set((input.resources ?? []).map((r) => r.group))],
          ownObjects: [
            { group: 'coordination.k8s.io', resource: 'leases', name: `${input.name}-leader` },
            ...namedObjects(namespaceRules),
          ],
        })
      : [];
    return [...declared, ...owned].map((o) => structuredClone(o) as Record<string, unknown>);
  };
  const policyNames = () =>
    policies(namespace)
      .filter((o) => o.kind === 'ValidatingAdmissionPolicy')
      .map((o) => (o.metadata as { name: string }).name);
  // The operator reads its own policies to know they are in force before it runs workloads. A
  // namespace-scoped install cannot read cluster-scoped objects (its installer vouches instead).
  const policyReadRules = (): (PolicyRule & { reason: string })[] => {
    const names = policyNames();
    if (names.length === 0) return [];
    return [
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
        verbs: ['get'],
        resourceNames: names,
        reason: 'checks that its admission policies and their bindings are installed before it runs workloads',
      },
    ];
  };
  const rbacOptions = (options: RbacInstallOptions): RbacOptions => {
    const watched = options.watchNamespace ?? input.watchNamespace;
    const { clusterRules, namespaceRules } = guardRules(guard && !watched && options.crdDeletionGuard !== false);
    return {
      name: definition.name,
      namespace,
      ...(watched ? { watchNamespace: watched } : {}),
      extraRules: definition.extraRules,
      clusterRules: [...clusterRules, ...policyReadRules(), ...definition.clusterRules],
      namespaceRules,
      plurals: definition.plurals,
    };
  };
  const definition: OperatorDefinition = {
    name: input.name,
    image: input.image ?? `${input.name}:latest`,
    namespace,
    resources: input.resources ?? [],
    controllers: input.controllers,
    watchNamespace: input.watchNamespace,
    extraRules: input.extraRules ?? [],
    clusterRules: input.clusterRules ?? [],
    crdDeletionGuard: guard,
    plurals: input.plurals ?? {},
    cache: input.cache ?? {},
    ownership: input.ownership,
    get admissionPolicies() {
      return policies(namespace);
    },
    policies: (options = {}) => policies(options.namespace ?? namespace),
    policyNames,
    crds: () => definition.resources.map((r) => r.crd),
    rbac: (options = {}) => deriveRbac(definition.controllers, rbacOptions(options)),
    explainRbac: (options = {}) => explainRbac(definition.controllers, rbacOptions(options)),
    webhookManifests: () => {
      if (!guard) return [];
      const labels = { 'app.kubernetes.io/name': definition.name, 'app.kubernetes.io/managed-by': 'kanri' };
      return [
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: service.name, namespace, labels },
          spec: {
            selector: { 'app.kubernetes.io/name': definition.name },
            ports: [{ name: 'webhook', port: 443, targetPort: WEBHOOK_PORT, protocol: 'TCP' }],
          },
        },
        crdDeletionGuardWebhook({ name: configurationName, service, crdNames: crdNames() }) as unknown as Record<
          string,
          unknown
        >,
      ];
    },
    async manager(options: ManagerOptions = {}) {
      // KANRI_WATCH_NAMESPACE (the chart's watchNamespace) narrows an install to one namespace.
      const watched = watchNamespaceFromEnv(process.env) ?? input.watchNamespace;
      const manager = await Manager.create({
        name: definition.name,
        ...(watched ? { namespace: watched } : {}),
        cache: definition.cache,
        // Leader election on a Lease in POD_NAMESPACE, unless the Deployment turns it off.
        ...managerOptionsFromEnv(process.env, namespace),
        // In a cluster (the generated Deployment sets POD_NAMESPACE) the webhook serves behind its
        // Service; out of cluster (`kanri dev`, tests) it is opt-in through `options.webhook`. An
        // install without the webhook's objects says so with KANRI_CRD_DELETION_GUARD=false; one
        // watching a single namespace has no cluster-wide webhook.
        ...(guard && !watched && process.env.POD_NAMESPACE && crdDeletionGuardFromEnv(process.env)
          ? {
              webhook: {
                bindAddress: `:${WEBHOOK_PORT}`,
                service: { ...service, namespace: process.env.POD_NAMESPACE },
                configurationName,
                certificateSecret,
                crdNames: crdNames(),
              },
            }
          : {}),
        ...options,
      });
      for (const c of definition.controllers) manager.add(c as unknown as ControllerDefinition<KubeObject>);
      return manager;
    },
  };
  return definition;
}
