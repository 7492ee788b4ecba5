/**
 * Which nodes the demo's instances run on. Real nodes (kubelet, containerd and kube-proxy, the
 * instance image built from packages/postgres/Dockerfile) wherever the machine can run them, as a
 * user's cluster would; process nodes (each Pod's agent and postgres as local processes) where it
 * cannot, with the reason. `KANRI_DEMO_NODES=process` or `=real` chooses instead.
 */
import { fileURLToPath } from 'node:url';
import {
  buildImageSet,
  type ControlPlaneOptions,
  ensurePgBackRest,
  POSTGRES_IMAGE_MAJORS,
  postgresImageBuilds,
  postgresVersionImages,
  realNodesUnsupportedReason,
  runnableAs,
  runnableFileAs,
} from '@kanri/testenv';

export type NodeKind = 'real' | 'process';

export interface DemoNodes {
  readonly kind: NodeKind;
  /** Why process nodes, when the machine chose them. */
  readonly fallbackReason?: string;
  /** `realNodes` or `processNodes`, for startControlPlane. */
  readonly options: Pick<ControlPlaneOptions, 'realNodes' | 'processNodes'>;
  /** For the progress line: `3 real nodes` or `2 process nodes`. */
  readonly summary: string;
}

/** The demo's own choice, from `KANRI_DEMO_NODES`; `auto` when unset. */
export function requestedNodes(env: NodeJS.ProcessEnv = process.env): NodeKind | 'auto' {
  const value = env.KANRI_DEMO_NODES ?? 'auto';
  if (value === 'auto' || value === 'real' || value === 'process') return value;
  throw new Error(`KANRI_DEMO_NODES must be real, process or auto, not ${JSON.stringify(value)}`);
}

/** The repository root, where the Dockerfile's build context is (dist/src/nodes.js → ../../../../). */
const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * Builds what the chosen nodes need: on real nodes, the instance image (buildah, cached after the
 * first build) tagged once per major it carries (every major the operator admits), all in one
 * archive every node imports; on process nodes, the mapping of its tags to this machine's
 * PostgreSQL builds.
 */
export async function demoNodes(
  image: string,
  log: (line: string) => void,
  requested: NodeKind | 'auto' = requestedNodes(),
  whyNotReal: () => Promise<string | undefined> = realNodesUnsupportedReason,
): Promise<DemoNodes> {
  const unsupported = requested === 'process' ? undefined : await whyNotReal();
  if (requested === 'real' && unsupported) throw new Error(`KANRI_DEMO_NODES=real, but ${unsupported}`);
  if (requested !== 'process' && !unsupported) {
    const tags = POSTGRES_IMAGE_MAJORS.map((m) => `:${m}`).join(', ');
    log(
      `      Building ${image} (${tags}: one image with every major) from packages/postgres/Dockerfile with buildah (minutes the first time)…`,
    );
    const printed = new Set<string>();
    const once = (line: string) => !printed.has(line) && Boolean(printed.add(line));
    const built = await buildImageSet(
      `${image}:all-majors`,
      postgresImageBuilds(image, `${REPO}packages/postgres/Dockerfile`, REPO),
      // The steps that take time, each once: the tags after the first repeat every step but the
      // last, from the cache; a step taken from the cache prints nothing more.
      {
        onOutput: (line) =>
          /STEP \d+\/\d+: (FROM|COPY|RUN)/.test(line) && once(line) && log(`      ${line.slice(0, 110)}`),
      },
    );
    log(`      ${image} ${tags}: ${(built.bytes / 1e6).toFixed(0)} MB, ${(built.ms / 1000).toFixed(1)} s`);
    return {
      kind: 'real',
      options: { realNodes: { count: 3, imageArchives: [built.archive] } },
      summary: '3 real nodes (kubelet, containerd, kube-proxy)',
    };
  }
  // pgBackRest runs as the agent's user, which cannot read the cache under /root: a staged copy.
  const pgbackrest = runnableFileAs('postgres', await ensurePgBackRest());
  return {
    kind: 'process',
    ...(unsupported ? { fallbackReason: unsupported } : {}),
    options: {
      processNodes: {
        count: 2,
        // One mapping per tag: the seed's `postgresVersion: 16` runs a real PostgreSQL 16.
        images: await postgresVersionImages(image, {
          // As the image's ENTRYPOINT (packages/postgres/Dockerfile), with its small young generation.
          // Node itself too: postgres runs the agent's archive command with it, and a Node.js
          // installed under /root (test-node.mjs's) is out of the postgres user's reach.
          entrypoint: [
            runnableFileAs('postgres', process.execPath),
            '--max-semi-space-size=1',
            runnableAs('postgres', fileURLToPath(import.meta.resolve('@kanri/postgres/agent/main.js'))),
          ],
          user: 'postgres',
          env: { KANRI_PGBACKREST: pgbackrest },
        }),
      },
    },
    summary: '2 process nodes',
  };
}
