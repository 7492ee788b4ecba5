/** Packaging of an operator: plain manifests, a Helm chart and a Dockerfile, all from its OperatorDefinition. Pure. */
export type { DockerfileOptions } from './dockerfile.js';
export { operatorDockerfile } from './dockerfile.js';
export type { ChartFile } from './helm-chart.js';
export { helmChart } from './helm-chart.js';
export type { OperatorManifests } from './manifests.js';
export { manifestsToYaml, operatorManifests } from './manifests.js';
export { isOperatorDefinition, operatorDefinitionProblem } from './operator-check.js';
export type { PackagingOptions, ResolvedPackaging } from './options.js';
export { DEFAULT_RESOURCES, OPERATOR_UID, parseImage, resolvePackaging } from './options.js';
export {
  admissionPolicyCheckFromEnv,
  crdDeletionGuardFromEnv,
  managerOptionsFromEnv,
  OPERATOR_ENV,
  WEBHOOK_PORT,
  watchNamespaceFromEnv,
} from './runtime-env.js';
