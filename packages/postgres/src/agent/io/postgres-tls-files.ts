/**
 * The cluster's PostgreSQL TLS material (contract/postgres-tls.ts), from the Secret the agent
 * follows to files postgres and libpq read: mode 0600 in the run volume, as postgres demands of a
 * key it owns. Files are replaced whole (write, then rename), so a reload never reads half a pair.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { POSTGRES_TLS_KEY, type PostgresTlsFiles } from '../../contract/index.js';
import { writeFileIfChanged } from './files.js';

/**
 * Writes the Secret's files under `dir` and resolves their paths, and whether a file's content
 * changed (a renewed certificate: postgres must reload, though no setting differs); `files` is
 * undefined while the Secret lacks one of them (postgres then serves without TLS, as before the
 * operator issued them).
 *
 * @example
 * ```ts
 * const { files, changed } = await writePostgresTlsFiles(view.tlsData, join(config.runDir, 'postgres-tls'));
 * ```
 */
export async function writePostgresTlsFiles(
  data: Readonly<Record<string, string>> | undefined,
  dir: string,
): Promise<{ files: PostgresTlsFiles | undefined; changed: boolean }> {
  if (!data) return { files: undefined, changed: false };
  const entries = Object.entries(POSTGRES_TLS_KEY) as [keyof PostgresTlsFiles, string][];
  const contents = entries.map(([field, key]) => [field, key, data[key]] as const);
  if (contents.some(([, , value]) => !value)) return { files: undefined, changed: false };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files: Partial<Record<keyof PostgresTlsFiles, string>> = {};
  let changed = false;
  for (const [field, key, value] of contents) {
    const path = join(dir, key);
    changed = (await writeFileIfChanged(path, Buffer.from(value ?? '', 'base64').toString('utf8'), 0o600)) || changed;
    files[field] = path;
  }
  return { files: files as PostgresTlsFiles, changed };
}
