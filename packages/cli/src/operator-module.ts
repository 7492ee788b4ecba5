/**
 * Finds and loads an operator project's OperatorDefinition: the module named by `--operator` or
 * by package.json's `"kanri": { "operator": "dist/src/operator.js" }`, whose default export (or
 * named export `operator`) is what `defineOperator` returned. Every error names the file at fault.
 */
import { access, readFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { OperatorDefinition } from '@kanri/api';

/** Duck-typed, since the project's own copy of @kanri/api made it, not the CLI's. */
export function isOperatorDefinition(value: unknown): value is OperatorDefinition {
  if (!value || typeof value !== 'object') return false;
  const v = value as Partial<Record<keyof OperatorDefinition, unknown>>;
  return (
    typeof v.name === 'string' &&
    Array.isArray(v.controllers) &&
    Array.isArray(v.resources) &&
    typeof v.crds === 'function' &&
    typeof v.manager === 'function'
  );
}

function describeExport(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object without name, controllers, crds() and manager()' : `a ${typeof value}`;
}

/** The definition among a module's exports, or an error saying what each candidate was. */
export function pickOperator(exports: Record<string, unknown>, shown: string): OperatorDefinition {
  for (const key of ['default', 'operator']) {
    const value = exports[key];
    if (isOperatorDefinition(value)) return value;
  }
  throw new Error(
    `${shown}: no default export or \`operator\` export is an OperatorDefinition (default export: ${describeExport(exports.default)}, \`operator\`: ${describeExport(exports.operator)}); export the value of defineOperator(…) from @kanri/api`,
  );
}

/** The absolute path of the operator module: `--operator`, else package.json's `kanri.operator`, relative to `cwd`. */
export async function resolveOperatorModule(operator: string | undefined, cwd = process.cwd()): Promise<string> {
  if (operator) return resolve(cwd, operator);
  const file = resolve(cwd, 'package.json');
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) {
    throw new Error(`no --operator given and no package.json in ${cwd}; run this in an operator project (kanri init)`);
  }
  let pkg: { kanri?: { operator?: unknown } };
  try {
    pkg = JSON.parse(text);
  } catch (error) {
    throw new Error(`package.json: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const field = pkg.kanri?.operator;
  if (field === undefined) {
    throw new Error(
      'package.json: no "kanri": { "operator": … } field; set it to the built module that exports defineOperator(…), for example "dist/src/operator.js", or pass --operator <module>',
    );
  }
  if (typeof field !== 'string' || field === '') {
    throw new Error(
      `package.json: "kanri.operator" must be a path such as "dist/src/operator.js", got ${JSON.stringify(field)}`,
    );
  }
  return resolve(dirname(file), field);
}

/** Imports the module and returns its definition; `shown` is the path as the person would write it. */
export async function loadOperator(
  path: string,
  cwd = process.cwd(),
): Promise<{ definition: OperatorDefinition; shown: string }> {
  const shown = relative(cwd, path) || path;
  try {
    await access(path);
  } catch {
    const hint = /(^|\/)dist\//.test(shown) ? ' (build the project first: npm run build)' : '';
    throw new Error(`${shown}: not found${hint}`);
  }
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`${shown}: failed to load: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return { definition: pickOperator(exports, shown), shown };
}
