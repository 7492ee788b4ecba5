/**
 * @kanri/api: define custom resources with zod and get their types and CRDs.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * import { defineResource } from '@kanri/api';
 *
 * const Widget = defineResource({ group: 'example.com', kind: 'Widget', versions: { v1: { spec: z.object({ size: z.number().int() }) } } });
 * type Widget = typeof Widget.$object;
 * ```
 */

export { type Condition, conditionSchema } from './condition.js';
export type {
  CustomResourceDefinitionObject,
  ObjectValidation,
  PrinterColumn,
  ResourceDefinition,
  ResourceDefinitionInput,
  ResourceObject,
  VersionDefinition,
} from './define-resource.js';
export { defineResource, pluralize } from './define-resource.js';
export type { OperatorDefinition, OperatorInput, OperatorInstall, RbacInstallOptions } from './operator.js';
export { defineOperator, WEBHOOK_PORT } from './operator.js';
export type { OwnedWritesInput, OwnedWriteValidation, Ownership } from './owned-writes-policy.js';
export { ownedWritesPolicies, ownedWritesPolicyNames, serviceAccountUser } from './owned-writes-policy.js';
export type {
  ChartFile,
  DockerfileOptions,
  OperatorManifests,
  PackagingOptions,
  ResolvedPackaging,
} from './packaging/index.js';
export {
  admissionPolicyCheckFromEnv,
  crdDeletionGuardFromEnv,
  DEFAULT_RESOURCES,
  helmChart,
  isOperatorDefinition,
  managerOptionsFromEnv,
  manifestsToYaml,
  OPERATOR_ENV,
  OPERATOR_UID,
  operatorDefinitionProblem,
  operatorDockerfile,
  operatorManifests,
  parseImage,
  resolvePackaging,
  watchNamespaceFromEnv,
} from './packaging/index.js';
export type { ExplainedRole, ExplainedRule, PolicyRule, RbacOptions } from './rbac.js';
export { deriveRbac, deriveRules, explainRbac, explainRules, mergeRules, toPolicyRule } from './rbac.js';
export { type RefusedField, type RefusedFields, type RefusedFieldType, refuseFields } from './refused-fields.js';
export type { JsonSchema } from './structural-schema.js';
export { SchemaError, toStructuralSchema } from './structural-schema.js';
