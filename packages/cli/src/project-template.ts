/**
 * What `kanri init` writes, computed without I/O: the names it derives and checks, and the
 * template files rendered with them. The caller reads the templates and writes the result.
 */
import { isAbsolute, join } from 'node:path';
import { pluralize } from '@kanri/api';

/** The values a project is made from, checked. */
export interface ProjectNames {
  /** Operator and npm package name: a DNS-1123 label. */
  readonly name: string;
  readonly group: string;
  readonly kind: string;
}

export interface TemplateFile {
  /** Path inside the template directory, `/`-separated. */
  readonly path: string;
  readonly content: string;
}

// defineOperator's rule: a DNS-1123 label that starts with a letter, since the name is also an npm package, a Deployment and a Lease.
const NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/;
const GROUP_PART = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function suggestName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^[^a-z]+|-+$/g, '')
    .slice(0, 63);
}

/** `website-operator` → `Website`, `my-app` → `MyApp`. */
export function kindFromName(name: string): string {
  const base = name.replace(/-(operator|controller)$/, '') || name;
  return base
    .split('-')
    .filter(Boolean)
    .map((part) => part[0]?.toUpperCase() + part.slice(1))
    .join('');
}

/** Checks the names, filling in the defaults; throws one line that says what is wrong and what would do. */
export function resolveNames(input: {
  name: string;
  group?: string | undefined;
  kind?: string | undefined;
}): ProjectNames {
  const { name } = input;
  if (!NAME.test(name)) {
    const suggestion = suggestName(name);
    throw new Error(
      `"${name}" is not a valid operator name: use a DNS-1123 label (lower-case letters, digits and '-', starting with a letter, at most 63 characters)${NAME.test(suggestion) ? `, for example "${suggestion}"` : ''}`,
    );
  }
  const kind = input.kind ?? kindFromName(name);
  if (!KIND.test(kind)) {
    throw new Error(
      `--kind "${kind}" is not a valid kind: use UpperCamelCase letters and digits (at most 63), for example "Website"`,
    );
  }
  const group = input.group ?? 'example.com';
  const parts = group.split('.');
  if (group.length > 253 || parts.length < 2 || !parts.every((p) => GROUP_PART.test(p))) {
    throw new Error(
      `--group "${group}" is not a valid API group: use a lower-case DNS name with at least one dot, for example "example.com"`,
    );
  }
  if (/(^|\.)(k8s\.io|kubernetes\.io)$/.test(group)) {
    throw new Error(`--group "${group}" is reserved for Kubernetes itself; use a domain you own`);
  }
  return { name, group, kind };
}

const TOKEN = /__(name|group|Kind|kind|kindCamel|plural|kanriVersion)__/g;

/** Replaces every `__token__` in `text`. */
export function renderText(text: string, names: ProjectNames, kanriVersion: string): string {
  const values: Record<string, string> = {
    name: names.name,
    group: names.group,
    Kind: names.kind,
    kind: names.kind.toLowerCase(),
    kindCamel: names.kind[0]?.toLowerCase() + names.kind.slice(1),
    plural: pluralize(names.kind),
    kanriVersion,
  };
  return text.replace(TOKEN, (_, token: string) => values[token] ?? '');
}

/** Where a template file lands: tokens replaced, and `_gitignore` → `.gitignore` (npm never packs a `.gitignore`). */
export function renderPath(path: string, names: ProjectNames): string {
  const rendered = renderText(path, names, '');
  return rendered.replace(/(^|\/)_(gitignore|dockerignore)$/, '$1.$2');
}

/**
 * The @kanri packages a generated project installs, directly or through one another. With
 * `--kanri-packages` every one of them must be a local tarball: npm resolves the exact
 * `"@kanri/runtime": "0.1.0"` that @kanri/api asks for to the project's own tarball only if the
 * project depends on it itself; otherwise it asks the registry.
 */
export const KANRI_PACKAGES = ['api', 'cache', 'cli', 'client', 'runtime', 'testenv', 'timing'] as const;

/** `kanri-api-0.1.0.tgz`: what `npm pack` names the tarball of `@kanri/api` 0.1.0. */
export function tarballName(pkg: string, version: string): string {
  return `kanri-${pkg}-${version}.tgz`;
}

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [field: string]: unknown;
}

function sorted(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Points every @kanri dependency of a rendered package.json at a tarball in `packagesDir`
 * (absolute), adding those needed only transitively to `dependencies`.
 */
export function useLocalTarballs(packageJson: string, packagesDir: string, version: string): string {
  if (!isAbsolute(packagesDir)) throw new Error(`--kanri-packages must be absolute here, got ${packagesDir}`);
  const pkg = JSON.parse(packageJson) as PackageJson;
  const dependencies = { ...pkg.dependencies };
  const devDependencies = { ...pkg.devDependencies };
  for (const short of KANRI_PACKAGES) {
    const name = `@kanri/${short}`;
    const spec = `file:${join(packagesDir, tarballName(short, version))}`;
    if (name in devDependencies) devDependencies[name] = spec;
    else dependencies[name] = spec;
  }
  return `${JSON.stringify({ ...pkg, dependencies: sorted(dependencies), devDependencies: sorted(devDependencies) }, null, 2)}\n`;
}

export interface PlanOptions {
  readonly kanriVersion: string;
  /** Absolute directory of `npm pack` tarballs to depend on instead of the registry. */
  readonly kanriPackages?: string | undefined;
}

/** The files of a new project: `path` relative to the project root. */
export function planProject(
  templates: readonly TemplateFile[],
  names: ProjectNames,
  options: PlanOptions,
): TemplateFile[] {
  return templates.map((file) => {
    const path = renderPath(file.path, names);
    let content = renderText(file.content, names, options.kanriVersion);
    if (path === 'package.json' && options.kanriPackages) {
      content = useLocalTarballs(content, options.kanriPackages, options.kanriVersion);
    }
    return { path, content };
  });
}
