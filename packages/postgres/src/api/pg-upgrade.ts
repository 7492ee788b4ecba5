/**
 * PGUpgrade, PGO's way to ask for a major upgrade, accepted so that PGO users keep their
 * manifests (with `apiVersion` changed). It drives the same engine as raising
 * `spec.postgresVersion` with the allow-major-upgrade annotation (operator/upgrade), and reports
 * with PGO's conditions: `Progressing` and `Succeeded`.
 */
import { conditionSchema, defineResource } from '@kanri/api';
import { z } from 'zod';
import { GROUP, PGUPGRADE_KIND, PGUPGRADE_PLURAL } from '../contract/index.js';
import { SUPPORTED_POSTGRES_VERSIONS } from './postgres-cluster.js';

const major = (what: string) =>
  z
    .number()
    .int()
    .min(SUPPORTED_POSTGRES_VERSIONS[0])
    .max(SUPPORTED_POSTGRES_VERSIONS[SUPPORTED_POSTGRES_VERSIONS.length - 1] as number)
    .describe(`The major version of PostgreSQL ${what}.`);

export const pgUpgradeSpec = z
  .object({
    postgresClusterName: z.string().min(1).max(63).describe('The PostgresCluster to upgrade, in the same namespace.'),
    fromPostgresVersion: major('before the upgrade'),
    toPostgresVersion: major('to upgrade to'),
    toPostgresImage: z
      .string()
      .min(1)
      .optional()
      .describe("The image of the instances after the upgrade (the cluster's spec.image). Default: the new major's."),
    image: z
      .string()
      .optional()
      .describe("PGO's upgrade image. Not used: Kanri's instance image of the new major runs pg_upgrade."),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'self.toPostgresVersion > self.fromPostgresVersion',
        message: 'toPostgresVersion must be greater than fromPostgresVersion',
      },
    ],
  })
  .describe('The upgrade to run.');

export const pgUpgradeStatus = z
  .object({
    observedGeneration: z.number().int().optional(),
    conditions: z
      .array(conditionSchema)
      .optional()
      .describe(
        "PGO's conditions: Progressing (the reason says what it waits for) and Succeeded (PGUpgradeSucceeded or PGUpgradeFailed).",
      ),
  })
  .describe('Where the upgrade stands; the details are in the cluster’s status.majorUpgrade.');

/**
 * PGUpgrade, `postgres.kanri.dev/v1`.
 *
 * @example
 * ```ts
 * const upgrade: PGUpgrade = {
 *   apiVersion: PGUpgradeResource.apiVersion,
 *   kind: 'PGUpgrade',
 *   metadata: { name: 'hippo-16', namespace: 'default' },
 *   spec: { postgresClusterName: 'hippo', fromPostgresVersion: 15, toPostgresVersion: 16 },
 * };
 * // and on the cluster: postgres.kanri.dev/allow-upgrade: hippo-16
 * ```
 */
export const PGUpgradeResource = defineResource({
  group: GROUP,
  kind: PGUPGRADE_KIND,
  plural: PGUPGRADE_PLURAL,
  shortNames: ['pgupgrade'],
  categories: ['postgres'],
  description: 'A major-version upgrade of a PostgresCluster (PGO-compatible).',
  versions: {
    v1: {
      spec: pgUpgradeSpec,
      status: pgUpgradeStatus,
      printerColumns: [
        { name: 'Cluster', type: 'string', jsonPath: '.spec.postgresClusterName' },
        { name: 'From', type: 'integer', jsonPath: '.spec.fromPostgresVersion' },
        { name: 'To', type: 'integer', jsonPath: '.spec.toPostgresVersion' },
        { name: 'Progressing', type: 'string', jsonPath: '.status.conditions[?(@.type=="Progressing")].reason' },
        { name: 'Succeeded', type: 'string', jsonPath: '.status.conditions[?(@.type=="Succeeded")].status' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  },
});

export type PGUpgrade = typeof PGUpgradeResource.$object;
