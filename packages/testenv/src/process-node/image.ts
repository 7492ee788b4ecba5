/**
 * Image mappings: what a process node runs for a container image, and the container's argv
 * under Kubernetes' entrypoint rules. Pure.
 */
import type { Container } from 'kubernetes-types/core/v1.js';

/**
 * How a process node runs an image: the stand-in for the image's ENTRYPOINT, CMD, ENV, USER and
 * WORKDIR, on this machine. The programs named must be readable and executable by `user`.
 *
 * @example
 * ```ts
 * const images: ImageMappings = {
 *   // Every tag of the image runs the agent as the local postgres user.
 *   'ghcr.io/kanri-dev/postgres': {
 *     entrypoint: [process.execPath, '/abs/path/agent.js'],
 *     env: { PG_BIN: '/usr/lib/postgresql/15/bin' },
 *     user: 'postgres',
 *     commands: { pg_isready: ['/usr/lib/postgresql/15/bin/pg_isready'] }, // for an exec probe
 *   },
 * };
 * ```
 */
export interface ImageMapping {
  /** The image's ENTRYPOINT as a local argv, e.g. `[process.execPath, '/abs/agent.js']`. */
  readonly entrypoint: readonly string[];
  /** The image's CMD: arguments appended when the container sets neither `command` nor `args`. */
  readonly cmd?: readonly string[];
  /**
   * Local stand-ins for programs a Pod names in `command` (or in an exec probe), keyed by the
   * program as written in the Pod (`command[0]`), e.g. `{ 'pg_isready': ['/usr/lib/postgresql/15/bin/pg_isready'] }`.
   * A container whose `command[0]` is not listed fails with `CreateContainerError`.
   */
  readonly commands?: Readonly<Record<string, readonly string[]>>;
  /** The image's ENV; the Pod's `env` overrides it. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The image's USER, as a local user name or uid. It overrides the Pod's `runAsUser`, because
   * the users of this machine are not the image's (PostgreSQL refuses to run as root and needs a
   * passwd entry: map it to the local `postgres` user). Applies only when testenv runs as root.
   */
  readonly user?: string | number;
  /** The image's WORKDIR, as a local directory. Default: the Pod's own directory. */
  readonly workingDir?: string;
}

/**
 * Image reference (`registry/repo`, with or without `:tag`) → how to run it. References are
 * compared as written: `postgres:16` and `docker.io/library/postgres:16` are different keys.
 */
export type ImageMappings = Readonly<Record<string, ImageMapping>>;

/** `ghcr.io/x/pg:16@sha256:…` → `ghcr.io/x/pg`. */
export function imageRepository(image: string): string {
  const withoutDigest = image.split('@')[0] ?? image;
  const lastSlash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  return colon > lastSlash ? withoutDigest.slice(0, colon) : withoutDigest;
}

/** The mapping for `image`: an exact key (with tag) wins over the repository without tag. */
export function findImageMapping(images: ImageMappings, image: string): ImageMapping | undefined {
  return images[image] ?? images[image.split('@')[0] ?? image] ?? images[imageRepository(image)];
}

/**
 * Kubernetes' `$(VAR)` expansion in command, args and env values: a defined variable is
 * substituted, an undefined one is left as written, and `$$` escapes a `$`.
 */
export function expandVariables(input: string, vars: ReadonlyMap<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = vars.get(name);
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += `$${next}`;
      i++;
    }
  }
  return out;
}

export type ArgvResult =
  | { readonly ok: true; readonly argv: readonly string[] }
  | { readonly ok: false; readonly reason: 'CreateContainerError'; readonly message: string };

/**
 * Resolves `command` (a program as written in the Pod) through the mapping's `commands`.
 * Returns undefined when the mapping has no stand-in for it.
 */
export function resolveCommand(mapping: ImageMapping, command: readonly string[]): readonly string[] | undefined {
  const [program, ...rest] = command;
  if (program === undefined) return undefined;
  const local = mapping.commands?.[program];
  return local ? [...local, ...rest] : undefined;
}

/**
 * The argv for a container, with Kubernetes' rules: `command` replaces the entrypoint (and drops
 * the image's CMD), `args` replace the CMD; `$(VAR)` references are expanded from `vars`.
 */
export function containerArgv(
  mapping: ImageMapping,
  container: Pick<Container, 'name' | 'command' | 'args'>,
  vars: ReadonlyMap<string, string>,
  pod: { readonly namespace: string; readonly name: string },
): ArgvResult {
  const expand = (list: readonly string[]) => list.map((s) => expandVariables(s, vars));
  const args = container.args ? expand(container.args) : undefined;
  if (container.command && container.command.length > 0) {
    const command = expand(container.command);
    const resolved = resolveCommand(mapping, command);
    if (!resolved) {
      return {
        ok: false,
        reason: 'CreateContainerError',
        message:
          `Pod ${pod.namespace}/${pod.name} container "${container.name}" sets command ${JSON.stringify(command[0])}, ` +
          `which this process node cannot run: add it to the image mapping's "commands"`,
      };
    }
    return { ok: true, argv: [...resolved, ...(args ?? [])] };
  }
  return { ok: true, argv: [...mapping.entrypoint, ...(args ?? mapping.cmd ?? [])] };
}
