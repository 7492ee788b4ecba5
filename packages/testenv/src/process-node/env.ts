/**
 * A container's environment under Kubernetes' rules (`envFrom`, then `env` with `valueFrom` and
 * `$(VAR)` expansion), from objects fetched beforehand. Pure.
 */
import { quantityMilliValue, quantityValue } from '@kanri/timing';
import type { ConfigMap, Container, Pod, Secret } from 'kubernetes-types/core/v1.js';
import { expandVariables } from './image.js';

/** The ConfigMaps and Secrets of the Pod's namespace that the container refers to; absent = not found. */
export interface EnvSources {
  readonly configMaps: ReadonlyMap<string, ConfigMap>;
  readonly secrets: ReadonlyMap<string, Secret>;
}

export type EnvResult =
  | { readonly ok: true; readonly env: ReadonlyMap<string, string> }
  | { readonly ok: false; readonly reason: 'CreateContainerConfigError'; readonly message: string };

/** Node-level facts that `fieldRef` and `resourceFieldRef` can read. */
export interface EnvContext {
  readonly podIP: string;
  readonly hostIP: string;
  /** Node allocatable, the default for unset limits. */
  readonly allocatable: Readonly<Record<string, string>>;
}

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function decode(data: string): string {
  return Buffer.from(data, 'base64').toString('utf8');
}

function secretData(secret: Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) out[key] = decode(value);
  for (const [key, value] of Object.entries(secret.stringData ?? {})) out[key] = value;
  return out;
}

function configMapData(configMap: ConfigMap): Record<string, string> {
  return { ...(configMap.data ?? {}) };
}

/** The value of a `fieldRef` path for this Pod, or undefined if Kubernetes does not support it. */
export function fieldRefValue(pod: Pod, fieldPath: string, context: EnvContext): string | undefined {
  const meta = pod.metadata ?? {};
  const annotation = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (annotation) {
    const map = annotation[1] === 'labels' ? meta.labels : meta.annotations;
    return map?.[annotation[2] ?? ''] ?? '';
  }
  const serialise = (map: Record<string, string> | undefined) =>
    Object.entries(map ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}="${v}"`)
      .join('\n');
  switch (fieldPath) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
      return serialise(meta.labels);
    case 'metadata.annotations':
      return serialise(meta.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.podIPs':
      return context.podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return context.hostIP;
    default:
      return undefined;
  }
}

/**
 * A `resourceFieldRef` value: the container's limit (node allocatable when unset) or request,
 * divided and rounded up as the kubelet does: CPU in millicores, the rest in whole units, and an
 * unset or zero divisor counts as 1.
 */
export function resourceFieldValue(
  container: Container,
  resource: string,
  divisor: string | number | undefined,
  context: EnvContext,
): string | undefined {
  const [kind, name] = resource.split('.', 2) as [string, string | undefined];
  if (!name || (kind !== 'limits' && kind !== 'requests')) return undefined;
  const resources = container.resources ?? {};
  const set = kind === 'limits' ? resources.limits?.[name] : (resources.requests?.[name] ?? resources.limits?.[name]);
  const raw = set ?? (kind === 'limits' ? context.allocatable[name] : '0');
  if (raw === undefined) return undefined;
  const read = name === 'cpu' ? quantityMilliValue : quantityValue;
  const value = read(String(raw));
  const by = read(String(divisor ?? 1));
  if (value === undefined || by === undefined) return undefined;
  return String(Math.ceil(value / (by === 0 ? (read('1') ?? 1) : by)));
}

/**
 * The container's environment from the Pod spec (image ENV not included). Missing non-optional
 * ConfigMaps, Secrets or keys fail like the kubelet does, with `CreateContainerConfigError`.
 */
export function buildContainerEnv(pod: Pod, container: Container, sources: EnvSources, context: EnvContext): EnvResult {
  const env = new Map<string, string>();
  const fail = (message: string): EnvResult => ({ ok: false, reason: 'CreateContainerConfigError', message });
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let data: Record<string, string> | undefined;
    if (from.configMapRef) {
      const cm = sources.configMaps.get(from.configMapRef.name ?? '');
      if (!cm) {
        if (from.configMapRef.optional) continue;
        return fail(`configmap "${from.configMapRef.name}" not found`);
      }
      data = configMapData(cm);
    } else if (from.secretRef) {
      const secret = sources.secrets.get(from.secretRef.name ?? '');
      if (!secret) {
        if (from.secretRef.optional) continue;
        return fail(`secret "${from.secretRef.name}" not found`);
      }
      data = secretData(secret);
    }
    for (const [key, value] of Object.entries(data ?? {})) {
      // The kubelet skips keys that are not valid variable names (and records an event).
      if (ENV_NAME.test(`${prefix}${key}`)) env.set(`${prefix}${key}`, value);
    }
  }
  for (const variable of container.env ?? []) {
    const from = variable.valueFrom;
    if (!from) {
      env.set(variable.name, expandVariables(variable.value ?? '', env));
      continue;
    }
    if (from.fieldRef) {
      const value = fieldRefValue(pod, from.fieldRef.fieldPath, context);
      if (value === undefined) return fail(`env ${variable.name}: unsupported fieldRef ${from.fieldRef.fieldPath}`);
      env.set(variable.name, value);
    } else if (from.resourceFieldRef) {
      const target =
        (from.resourceFieldRef.containerName
          ? [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find(
              (c) => c.name === from.resourceFieldRef?.containerName,
            )
          : container) ?? container;
      const value = resourceFieldValue(target, from.resourceFieldRef.resource, from.resourceFieldRef.divisor, context);
      if (value === undefined)
        return fail(`env ${variable.name}: unsupported resourceFieldRef ${from.resourceFieldRef.resource}`);
      env.set(variable.name, value);
    } else if (from.configMapKeyRef) {
      const ref = from.configMapKeyRef;
      const cm = sources.configMaps.get(ref.name ?? '');
      const value = cm ? configMapData(cm)[ref.key] : undefined;
      if (value === undefined) {
        if (ref.optional) continue;
        return fail(
          cm
            ? `couldn't find key ${ref.key} in ConfigMap ${pod.metadata?.namespace}/${ref.name}`
            : `configmap "${ref.name}" not found`,
        );
      }
      env.set(variable.name, value);
    } else if (from.secretKeyRef) {
      const ref = from.secretKeyRef;
      const secret = sources.secrets.get(ref.name ?? '');
      const value = secret ? secretData(secret)[ref.key] : undefined;
      if (value === undefined) {
        if (ref.optional) continue;
        return fail(
          secret
            ? `couldn't find key ${ref.key} in Secret ${pod.metadata?.namespace}/${ref.name}`
            : `secret "${ref.name}" not found`,
        );
      }
      env.set(variable.name, value);
    }
  }
  return { ok: true, env };
}

/** Names of the ConfigMaps and Secrets a container's environment refers to. */
export function envReferences(container: Container): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
    if (from.secretRef?.name) secrets.add(from.secretRef.name);
  }
  for (const variable of container.env ?? []) {
    const name = variable.valueFrom?.configMapKeyRef?.name;
    if (name) configMaps.add(name);
    const secret = variable.valueFrom?.secretKeyRef?.name;
    if (secret) secrets.add(secret);
  }
  return { configMaps, secrets };
}

/** Secret and ConfigMap values decoded to text; exported for volume materialisation. */
export const objectData = { secret: secretData, configMap: configMapData };
