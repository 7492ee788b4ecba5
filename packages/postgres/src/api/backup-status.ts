/** `status.pgbackrest` and `status.archive` of a PostgresCluster: what the operator observed of backups and WAL archiving. */
import { z } from 'zod';

const time = (what: string) => z.string().optional().describe(`${what} (RFC 3339).`);
const count = (what: string) => z.number().int().min(0).optional().describe(what);

const jobStatus = (what: string) => ({
  id: z.string().describe(`The value of the annotation that requested this ${what}.`),
  finished: z.boolean().describe(`Whether the ${what} is over (either way).`),
  succeeded: count(`Attempts of the ${what} that succeeded (0 or 1).`),
  failed: count(`Attempts of the ${what} that failed.`),
  startTime: time(`When the ${what} started`),
  completionTime: time(`When the ${what} succeeded`),
});

export const pgbackrestStatus = z
  .object({
    repos: z
      .array(
        z.object({
          name: z.string().describe('The repository, repo1 to repo4.'),
          stanzaCreated: z.boolean().describe('Whether the stanza exists in the repository (backups can be taken).'),
          repoOptionsHash: z
            .string()
            .optional()
            .describe('Hash of the repository settings the stanza was created for; a change creates it again.'),
        }),
      )
      .optional()
      .describe('One entry per declared repository.'),
    repoPaths: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        'Where each repository that is no volume keeps its stanza, by name, as the operator decided it (global.repoN-path, else the path recorded here before, else /pgbackrest/<namespace>/<cluster>-<uid>/<repo>); kept across operator upgrades. The agents read it here.',
      ),
    manualBackup: z
      .object({
        ...jobStatus('manual backup'),
        name: z.string().optional().describe('The PostgresBackup that records this backup.'),
      })
      .optional()
      .describe('The last one-off backup requested through the annotation.'),
    scheduledBackups: z
      .array(
        z.object({
          repo: z.string().describe('The repository.'),
          type: z.enum(['full', 'diff', 'incr']).describe('The backup type.'),
          name: z.string().describe('The PostgresBackup that records this backup.'),
          startTime: time('When the backup started'),
          completionTime: time('When the backup succeeded'),
          succeeded: count('Attempts that succeeded (0 or 1).'),
          failed: count('Attempts that failed.'),
        }),
      )
      .optional()
      .describe('The last scheduled backup of each repository and type.'),
    restore: z
      .object({
        ...jobStatus('in-place restore'),
        reason: z.string().optional().describe('Why the restore failed or is waiting, in a word (CamelCase).'),
        message: z
          .string()
          .optional()
          .describe("What happened, with pgBackRest's or postgres's own words when it failed."),
        instance: z.string().optional().describe('The instance that restores; the others are re-cloned from it.'),
        phase: z
          .enum(['Fencing', 'Restoring', 'Succeeded', 'Failed'])
          .optional()
          .describe(
            'Fencing: every instance is stopped; Restoring: the instance restores and recovers; then the result.',
          ),
      })
      .optional()
      .describe('The last in-place restore.'),
  })
  .describe('pgBackRest as observed by the operator.');

export const archiveStatus = z
  .object({
    lastArchivedWal: z.string().optional().describe('The last WAL file archived (pg_stat_archiver.last_archived_wal).'),
    lastArchivedTime: time('When it was archived'),
    lastFailedWal: z.string().optional().describe('The last WAL file whose archiving failed.'),
    lastFailedTime: time('When archiving it failed'),
    lastFailureReason: z.string().optional().describe('Why archiving failed, as pgBackRest reported it.'),
    pendingSegments: count('WAL files waiting to be archived (.ready files in pg_wal/archive_status).'),
    firstRecoverabilityPoint: time('The earliest time a restore can reach: the end of the oldest backup'),
    lastRecoverableTime: time('The latest time a restore can reach: the time of the last archived WAL'),
  })
  .describe('Continuous WAL archiving of the primary.');
