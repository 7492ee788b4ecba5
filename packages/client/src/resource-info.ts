/** What discovery says about a resource, and the URL paths built from it. Pure. */

export interface ResourceInfo {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** The plural resource name, e.g. `deployments`. */
  readonly plural: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
  /** Subresources the server offers, e.g. `status`, `scale`. */
  readonly subresources: readonly string[];
}

/** `apps/v1` → `{ group: 'apps', version: 'v1' }`; `v1` → core. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash === -1
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The discovery document path of a group version. */
export function groupVersionPath(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

/** `deployments.apps`, or `configmaps` for core: how kubectl and RBAC messages name a resource. */
export function qualifiedResource(info: Pick<ResourceInfo, 'group' | 'plural'>): string {
  return info.group ? `${info.plural}.${info.group}` : info.plural;
}

/** The collection or object path, optionally in a namespace and with a subresource. */
export function resourcePath(info: ResourceInfo, namespace?: string, name?: string, subresource?: string): string {
  let path = groupVersionPath(info.group, info.version);
  if (info.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${info.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}
