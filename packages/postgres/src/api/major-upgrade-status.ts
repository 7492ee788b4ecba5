/** `status.majorUpgrade` of a PostgresCluster: where a major-version upgrade stands (operator/upgrade). */
import { z } from 'zod';

/**
 * Checking: the primary runs `pg_upgrade --check` against the running server. CheckFailed: it found
 * a problem; nothing was stopped. WaitingForBackup: backups are configured and no full backup of
 * the last 24 h succeeded. Stopping: every instance is being stopped (downtime starts). Upgrading:
 * the last primary runs `pg_upgrade --link`. Recloning: the upgraded primary serves and the
 * replicas are re-created from it. Succeeded. Failed: the upgrade failed before the new server
 * started; the old data is intact, and setting `spec.postgresVersion` back runs it again.
 * RolledBack: the old version runs again.
 */
export const MAJOR_UPGRADE_PHASES = [
  'Checking',
  'CheckFailed',
  'WaitingForBackup',
  'Stopping',
  'Upgrading',
  'Recloning',
  'Succeeded',
  'Failed',
  'RolledBack',
] as const;
export type MajorUpgradePhase = (typeof MAJOR_UPGRADE_PHASES)[number];

export const majorUpgradeStatus = z
  .object({
    from: z.number().int().describe('The major the cluster ran before.'),
    to: z.number().int().describe('The major it upgrades to (spec.postgresVersion).'),
    phase: z.enum(MAJOR_UPGRADE_PHASES).describe(MAJOR_UPGRADE_PHASES.join(', ')),
    message: z.string().describe("What happens now, or what went wrong, in pg_upgrade's own words when it failed."),
    instance: z.string().optional().describe('The instance whose data is upgraded (the last primary).'),
    startedAt: z.string().optional().describe('When the instances were stopped: the downtime began (RFC 3339).'),
    downtimeSeconds: z
      .number()
      .optional()
      .describe('From the instances being stopped to the upgraded primary serving.'),
    pgUpgradeSeconds: z.number().optional().describe('How long pg_upgrade --link itself took.'),
    completedAt: z.string().optional().describe('When every instance ran the new major (RFC 3339).'),
  })
  .describe('The last major-version upgrade (spec.postgresVersion raised with the allow-major-upgrade annotation).');
export type MajorUpgradeStatus = z.infer<typeof majorUpgradeStatus>;
