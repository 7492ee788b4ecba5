/**
 * `kanri init <name>`: a new operator project from the templates shipped inside @kanri/cli. No
 * network: the templates are files of this package, and the @kanri versions are this CLI's own.
 */
import { access, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import type { TemplateFile } from '../project-template.js';

/** From `dist/src/commands/` (workspace) or the installed package alike. */
const packageRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const templateDir = join(packageRoot, 'templates', 'operator');

export async function cliVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

async function readTemplates(dir: string, prefix = ''): Promise<TemplateFile[]> {
  const files: TemplateFile[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...(await readTemplates(dir, path)));
    else files.push({ path, content: await readFile(join(dir, path), 'utf8') });
  }
  return files.sort((a, b) => a.path.localeCompare(b.path));
}

/** Refuses anything but a missing or empty directory, so nothing of the person's is overwritten. */
async function ensureEmptyDir(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (info && !info.isDirectory()) throw new Error(`${dir} exists and is not a directory`);
  if (info && (await readdir(dir)).length > 0) {
    throw new Error(`${dir} is not empty; choose another --dir or empty it first`);
  }
  await mkdir(dir, { recursive: true });
}

async function checkTarballs(dir: string, version: string): Promise<void> {
  const { KANRI_PACKAGES, tarballName } = await import('../project-template.js');
  const missing: string[] = [];
  for (const pkg of KANRI_PACKAGES) {
    const file = tarballName(pkg, version);
    await access(join(dir, file)).catch(() => missing.push(file));
  }
  if (missing.length > 0) {
    throw new Error(
      `--kanri-packages ${dir}: missing ${missing.join(', ')}; make them in a Kanri checkout with \`npm run build && npm pack --workspaces --pack-destination ${dir}\``,
    );
  }
}

interface InitOptions {
  readonly dir?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly kanriPackages?: string;
}

export async function init(name: string, options: InitOptions): Promise<void> {
  // Loaded here, not at the top: it brings @kanri/api and zod, which `kanri --help` does not need.
  const { planProject, resolveNames } = await import('../project-template.js');
  const names = resolveNames({ name, group: options.group, kind: options.kind });
  const kanriVersion = await cliVersion();
  const kanriPackages = options.kanriPackages ? resolve(options.kanriPackages) : undefined;
  if (kanriPackages) await checkTarballs(kanriPackages, kanriVersion);
  const target = resolve(options.dir ?? name);
  const files = planProject(await readTemplates(templateDir), names, { kanriVersion, kanriPackages });
  await ensureEmptyDir(target);
  for (const file of files) {
    const path = join(target, file.path);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, file.content, { flag: 'wx' });
  }
  const shown = relative(process.cwd(), target) || '.';
  console.log(`Created the ${names.name} operator (kind ${names.kind}, group ${names.group}) in ${shown}:`);
  for (const file of files) console.log(`  ${file.path}`);
  if (kanriPackages) console.log(`@kanri packages come from the tarballs in ${kanriPackages}.`);
  console.log('Next:');
  if (shown !== '.') console.log(`  cd ${shown}`);
  console.log('  npm install');
  console.log('  npm test        # the operator against a real local API server');
  console.log('  npm run dev     # the operator against `kanri dev up`, until Ctrl-C');
}

export function initCommand(): Command {
  return new Command('init')
    .description('Create a new operator project (offline, from templates shipped with the CLI)')
    .argument('<name>', 'operator name: a DNS-1123 label such as "website-operator"')
    .option('--dir <path>', 'where to create it (default: ./<name>); must be missing or empty')
    .option('--group <group>', 'API group of the custom resource', 'example.com')
    .option('--kind <Kind>', 'kind of the custom resource (default: from the name, "website-operator" → Website)')
    .addOption(
      new Option(
        '--kanri-packages <dir>',
        'depend on the @kanri tarballs in <dir> (made by `npm pack --workspaces`) instead of the registry',
      ).env('KANRI_PACKAGES'),
    )
    .addHelpText(
      'after',
      '\nExample:\n  kanri init website-operator --group example.com --kind Website\n  cd website-operator && npm install && npm test\n',
    )
    .action((name: string, options: InitOptions) => init(name, options));
}
