/**
 * PostgresBackup: one pgBackRest backup of a PostgresCluster, requested by a user, a schedule or
 * the cluster's backup annotation, with where it stands and what it produced. Its spec is
 * immutable: a different backup is a new object, so the record always describes what ran.
 */
import { conditionSchema, defineResource } from '@kanri/api';
import { z } from 'zod';
import { BACKUP_KIND, BACKUP_PLURAL, GROUP } from '../contract/index.js';
import { REPO_NAME_PATTERN } from './backup-options.js';
import { optionRules, POSTGRES_BACKUP_OPTIONS } from './command-options.js';

export const BACKUP_TYPES = ['full', 'diff', 'incr'] as const;
export const BACKUP_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed'] as const;
export const BACKUP_TRIGGERS = ['manual', 'schedule', 'annotation', 'upgrade'] as const;

export const postgresBackupSpec = z
  .object({
    cluster: z.string().min(1).max(63).describe('The PostgresCluster to back up, in the same namespace.'),
    repoName: z
      .string()
      .max(5)
      .regex(REPO_NAME_PATTERN)
      .describe("The repository to back up into: one of the cluster's spec.backups.pgbackrest.repos, repo1 to repo4."),
    type: z
      .enum(BACKUP_TYPES)
      .default('full')
      .describe(
        'full: every file; diff: files changed since the last full backup; incr: files changed since the last backup of any type. Default: full.',
      ),
    options: z
      .array(z.string().min(1).max(512))
      .max(32)
      .optional()
      .meta({ 'x-kubernetes-validations': optionRules(POSTGRES_BACKUP_OPTIONS, 'pgbackrest backup') })
      .describe(
        `Extra command-line options of pgbackrest backup, one per item, e.g. "--process-max=2". Only these are allowed (the type and repository are fields of their own): ${POSTGRES_BACKUP_OPTIONS.map((o) => `--${o.name}`).join(', ')}.`,
      ),
    trigger: z
      .enum(BACKUP_TRIGGERS)
      .default('manual')
      .describe(
        "What asked for the backup: manual (a user created this object), schedule (the repository's schedules), annotation (the cluster's backup annotation) or upgrade (the full backup after a major upgrade). Default: manual.",
      ),
  })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'self == oldSelf', message: 'spec is immutable: create another PostgresBackup for another backup' },
    ],
  })
  .describe('The backup to take. Immutable.');

const time = (what: string) => z.string().optional().describe(`${what} (RFC 3339).`);

export const postgresBackupStatus = z
  .object({
    observedGeneration: z.number().int().optional().describe('The generation of the spec this status describes.'),
    phase: z
      .enum(BACKUP_PHASES)
      .optional()
      .describe('Pending (waiting to start), Running, Succeeded or Failed. Succeeded and Failed are final.'),
    reason: z
      .string()
      .optional()
      .describe('Why the backup is in this phase, in a word (CamelCase), e.g. RepoNotFound.'),
    message: z.string().optional().describe('Details for people, e.g. the error pgBackRest printed.'),
    instance: z.string().optional().describe('The Pod that ran the backup.'),
    startedAt: time('When the backup started'),
    heartbeatTime: time('When the instance running the backup last reported it alive; a stale one means it died'),
    completedAt: time('When the backup succeeded or failed'),
    label: z.string().optional().describe('The pgBackRest backup label, e.g. 20260102-030405F.'),
    sizeBytes: z.number().int().min(0).optional().describe('Size of the database in the backup, in bytes.'),
    size: z.string().optional().describe('sizeBytes for people, e.g. "96.2 MiB".'),
    repoSizeBytes: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Bytes the backup takes in the repository (compressed, and only changed files for diff and incr).'),
    duration: z.string().optional().describe('How long the backup took, e.g. "5.2s".'),
    walStart: z.string().optional().describe('The first WAL file the backup needs.'),
    walStop: z.string().optional().describe('The last WAL file the backup needs.'),
    lsnStart: z.string().optional().describe('The LSN at which the backup started, e.g. 0/3000028.'),
    lsnStop: z
      .string()
      .optional()
      .describe('The LSN at which the backup stopped; a restore of it is consistent from there.'),
    conditions: z
      .array(conditionSchema)
      .optional()
      .describe('Standard Kubernetes conditions, each with its reason and the time it last changed.'),
  })
  .describe('Where the backup stands and what it produced, written by the operator.');

/**
 * PostgresBackup, `postgres.kanri.dev/v1` (short name `pgbackup`).
 *
 * @example
 * ```ts
 * const backup: PostgresBackup = {
 *   apiVersion: PostgresBackupResource.apiVersion,
 *   kind: 'PostgresBackup',
 *   metadata: { name: 'hippo-full-1', namespace: 'default' },
 *   spec: { cluster: 'hippo', repoName: 'repo1', type: 'full', trigger: 'manual' },
 * };
 * ```
 */
export const PostgresBackupResource = defineResource({
  group: GROUP,
  kind: BACKUP_KIND,
  plural: BACKUP_PLURAL,
  shortNames: ['pgbackup'],
  categories: ['postgres'],
  description: 'One pgBackRest backup of a PostgresCluster into one of its repositories, and its outcome.',
  versions: {
    v1: {
      spec: postgresBackupSpec,
      status: postgresBackupStatus,
      printerColumns: [
        { name: 'Cluster', type: 'string', jsonPath: '.spec.cluster' },
        { name: 'Repo', type: 'string', jsonPath: '.spec.repoName' },
        { name: 'Type', type: 'string', jsonPath: '.spec.type' },
        { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
        { name: 'Size', type: 'string', jsonPath: '.status.size' },
        { name: 'Duration', type: 'string', jsonPath: '.status.duration' },
        { name: 'WAL-Start', type: 'string', jsonPath: '.status.walStart' },
        { name: 'WAL-Stop', type: 'string', jsonPath: '.status.walStop' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  },
});

export type PostgresBackup = typeof PostgresBackupResource.$object;
export type PostgresBackupSpec = PostgresBackup['spec'];
export type PostgresBackupStatus = NonNullable<PostgresBackup['status']>;
