/**
 * What an instance restores from, as the operator resolves it and the agent reads it (ConfigMap
 * key `CONFIG_KEY.restoreSource`): the repo, its identity (for the default repo path), the stanza, the
 * user's restore options, and where the repo's credentials are mounted. One source for a clone
 * (`spec.dataSource`) and for an in-place restore (the restore annotation).
 */
import { z } from 'zod';

const repoSchema = z
  .object({
    name: z.string(),
    s3: z.object({ bucket: z.string(), endpoint: z.string(), region: z.string() }).optional(),
    gcs: z.object({ bucket: z.string() }).optional(),
    azure: z.object({ container: z.string() }).optional(),
    volume: z.unknown().optional(),
  })
  .loose();

const restoreSourceSchema = z.object({
  /** `clone`, or the restore annotation's value. */
  id: z.string(),
  /** Namespace and cluster whose repo it is. */
  namespace: z.string(),
  cluster: z.string(),
  stanza: z.string(),
  repo: repoSchema,
  global: z.record(z.string(), z.string()).optional(),
  options: z.array(z.string()).optional(),
  /** Container path where the repo's `configuration` is mounted. */
  configDir: z.string(),
  /**
   * Where the repo keeps the stanza (a repo that is no volume), as the operator resolved it: the
   * source cluster's recorded path, or the data source's. Absent for an in-place restore, which
   * reads the cluster's own recorded path.
   */
  repoPath: z.string().optional(),
  /**
   * A clone from another cluster's volume repo: that cluster's repo host, read through its
   * read-only clone port (contract/clone-gateway.ts): its Pod IP, and its pgBackRest certificate
   * then the source's CA (PEM), which the clone verifies it with and derives its token from.
   */
  gateway: z.object({ address: z.string(), certificate: z.string() }).optional(),
});

export type RestoreSource = z.infer<typeof restoreSourceSchema>;

/** @example `data[CONFIG_KEY.restoreSource] = encodeRestoreSource(source)` */
export function encodeRestoreSource(source: RestoreSource): string {
  return JSON.stringify(source);
}

/** The source in a ConfigMap value; undefined when absent or malformed. */
export function decodeRestoreSource(text: string | undefined): RestoreSource | undefined {
  if (!text) return undefined;
  try {
    const parsed = restoreSourceSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the options name a recovery target (then the restored instance promotes at it). */
export function hasRecoveryTarget(options: readonly string[] = []): boolean {
  return options.some((o) => /^--type=(time|xid|lsn|name|immediate)\b/.test(o.trim()));
}

/**
 * Where the restore's repo keeps its stanza, for buildPgBackRestConf: the path the operator
 * resolved, else (an in-place restore) the cluster's own recorded one.
 *
 * @example
 * ```ts
 * restoreStoredAt(source, recordedRepoPaths(view.cluster)); // { repo1: '/pgbackrest/db/hippo-1f0e…/repo1' }
 * ```
 */
export function restoreStoredAt(
  source: RestoreSource,
  ownRecorded: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const path = source.repoPath ?? (source.id === 'clone' ? undefined : ownRecorded?.[source.repo.name]);
  return path ? { [source.repo.name]: path } : {};
}
