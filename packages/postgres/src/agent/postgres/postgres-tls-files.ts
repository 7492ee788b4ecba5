/**
 * The cluster's PostgreSQL TLS material (contract/postgres-tls.ts), from the Secret the agent
 * follows to files postgres and libpq read: mode 0600 in the run volume, as postgres demands of a
 * key it owns. Files are replaced whole (write, then rename), and only from a whole, consistent
 * Secret (plan/material-plan.ts); otherwise the files already there stay and are served, so a
 * deleted or half-emptied Secret never turns TLS off. The run volume outlives a restart of the
 * agent, not the Pod.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { POSTGRES_TLS_KEY, type PostgresTlsFiles } from '../../contract/index.js';
import { readIfExists, writeFileIfChanged } from '../files.js';
import { decodeTlsSecret, type MaterialSource, readPostgresTls } from '../plan/material-plan.js';

export interface PostgresTlsState {
  /** The files to serve; undefined while the agent has none at all. */
  readonly files: PostgresTlsFiles | undefined;
  /** A file's content changed (a renewed certificate: postgres must reload, though no setting differs). */
  readonly changed: boolean;
  /** Why the Secret is not used (its files, if any, are the ones kept from before); undefined: it is. */
  readonly secretUnusable?: string;
}

const FIELDS = Object.entries(POSTGRES_TLS_KEY) as [keyof PostgresTlsFiles, string][];

function pathsIn(dir: string): PostgresTlsFiles {
  return Object.fromEntries(FIELDS.map(([field, key]) => [field, join(dir, key)])) as unknown as PostgresTlsFiles;
}

/**
 * Writes the Secret's files under `dir` when it is whole and consistent; otherwise keeps the files
 * already there when they are (written from an earlier version of the Secret), and says why.
 *
 * @example
 * ```ts
 * const tls = await writePostgresTlsFiles(view.tlsData, join(config.runDir, 'postgres-tls'), { what: 'Secret hippo-postgres-tls', known: true });
 * if (tls.secretUnusable) log.warn(tls.secretUnusable);
 * ```
 */
export async function writePostgresTlsFiles(
  data: Readonly<Record<string, string>> | undefined,
  dir: string,
  source: MaterialSource,
): Promise<PostgresTlsState> {
  const files = pathsIn(dir);
  const secret = readPostgresTls(data && decodeTlsSecret(data), source);
  if ('missing' in secret) {
    const kept = readPostgresTls(await readKept(files), { what: 'the files kept from it', known: true });
    return { files: 'value' in kept ? files : undefined, changed: false, secretUnusable: secret.missing };
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let changed = false;
  for (const [field] of FIELDS)
    changed = (await writeFileIfChanged(files[field], secret.value[field], 0o600)) || changed;
  return { files, changed };
}

async function readKept(files: PostgresTlsFiles): Promise<Partial<Record<keyof PostgresTlsFiles, string>>> {
  const pem: Partial<Record<keyof PostgresTlsFiles, string>> = {};
  for (const [field] of FIELDS) {
    const text = await readIfExists(files[field]);
    if (text) pem[field] = text;
  }
  return pem;
}
