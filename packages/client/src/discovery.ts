/**
 * Resolves kinds to resources through the API server's discovery documents, one request per
 * group version, cached. A kind not found is looked up once more before failing, so CRDs
 * installed after start-up are found.
 */
import { KubeError, NotFoundError } from './errors.js';
import { groupVersionPath, parseApiVersion, type ResourceInfo } from './resource-info.js';
import type { HttpTransport } from './transport/http-transport.js';

interface ApiResource {
  name: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
}

/** No resource of the kind exists on the server (its CRD is not installed, or the apiVersion is wrong). */
export class UnknownKindError extends KubeError {
  override name = 'UnknownKindError';
}

export class Discovery {
  readonly #transport: HttpTransport;
  readonly #groupVersions = new Map<string, Promise<ResourceInfo[]>>();

  constructor(transport: HttpTransport) {
    this.#transport = transport;
  }

  #fetch(group: string, version: string): Promise<ResourceInfo[]> {
    const key = `${group}/${version}`;
    let pending = this.#groupVersions.get(key);
    if (!pending) {
      pending = this.#transport
        .json<{ resources: ApiResource[] }>({ method: 'GET', path: groupVersionPath(group, version) })
        .then((list) => {
          const subresources = new Map<string, string[]>();
          for (const r of list.resources) {
            const [plural, sub] = r.name.split('/');
            if (plural && sub) subresources.set(plural, [...(subresources.get(plural) ?? []), sub]);
          }
          return list.resources
            .filter((r) => !r.name.includes('/'))
            .map((r) => ({
              group,
              version,
              kind: r.kind,
              plural: r.name,
              namespaced: r.namespaced,
              verbs: r.verbs,
              subresources: subresources.get(r.name) ?? [],
            }));
        });
      // A failed lookup must not stick: the next call asks again.
      pending.catch(() => this.#groupVersions.delete(key));
      this.#groupVersions.set(key, pending);
    }
    return pending;
  }

  /** The resource serving `kind` in `apiVersion`. */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const { group, version } = parseApiVersion(apiVersion);
    for (const fresh of [false, true]) {
      if (fresh) this.#groupVersions.delete(`${group}/${version}`);
      let resources: ResourceInfo[];
      try {
        resources = await this.#fetch(group, version);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        resources = [];
      }
      const found = resources.find((r) => r.kind === kind);
      if (found) return found;
    }
    throw new UnknownKindError(`the server has no resource for kind ${kind} in ${apiVersion}; is its CRD installed?`);
  }
}
