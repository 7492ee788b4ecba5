/**
 * What a PostgresCluster reports of itself: the schema of its status, written by the operator
 * (the agents' reports summed up) and read by users, kubectl and the demo.
 */
import { conditionSchema } from '@kanri/api';
import { z } from 'zod';
import { databaseInitSqlRunSchema } from '../contract/index.js';
import { archiveStatus, pgbackrestStatus } from './backup-status.js';
import { majorUpgradeStatus } from './major-upgrade-status.js';

/** `status` of a PostgresCluster. */
export const postgresClusterStatus = z.object({
  observedGeneration: z.number().int().optional(),
  conditions: z.array(conditionSchema).optional(),
  primary: z.string().optional().describe('Pod name of the current primary.'),
  lastPrimary: z
    .string()
    .optional()
    .describe(
      'Pod name of the last instance seen serving as primary; kept while there is none (mid-failover or switchover), so every change of primary is noticed.',
    ),
  instances: z
    .array(
      z.object({
        name: z.string(),
        role: z.string().optional(),
        ready: z.boolean(),
        timeline: z.number().int().optional(),
        lagBytes: z.number().int().optional(),
        version: z.string().optional().describe('The server version this instance reports, e.g. 16.15.'),
        dataVolume: z
          .object({
            sizeBytes: z.number().int().describe("The data volume's filesystem size."),
            availableBytes: z.number().int().describe('What is free of it.'),
          })
          .optional()
          .describe('The data volume as `df` in the Pod shows it, as of its last report.'),
      }),
    )
    .optional(),
  readyInstances: z.number().int().optional(),
  desiredInstances: z.number().int().optional(),
  systemIdentifier: z.string().optional().describe('Set once the first instance is initialised.'),
  postgresVersion: z
    .string()
    .optional()
    .describe('The server version the primary reports (what runs, e.g. 16.15); see the PostgresVersion condition.'),
  removedUsers: z
    .array(z.object({ name: z.string(), reason: z.string() }))
    .optional()
    .describe('Roles of users no longer in spec.users that are kept, and why (see spec.userRemovalPolicy).'),
  databaseInitSQL: z
    .string()
    .optional()
    .describe("The ConfigMap of spec.databaseInitSQL once its SQL ran without error (PGO's field)."),
  databaseInitSQLRun: databaseInitSqlRunSchema
    .optional()
    .describe("The primary's last run of spec.databaseInitSQL, succeeded or failed."),
  switchover: z
    .object({
      request: z.string().describe('The value of the switchover annotation being served.'),
      from: z.string().describe('The primary when the request was first seen: the Pod the order is on.'),
      token: z
        .string()
        .optional()
        .describe('The token of the order on that Pod (annotation postgres.kanri.dev/switchover-order).'),
    })
    .optional()
    .describe('A switchover in progress.'),
  patroni: z
    .object({
      switchover: z
        .string()
        .optional()
        .describe(
          "The value of annotation postgres-operator.crunchydata.com/trigger-switchover last served (PGO's status.patroni.switchover).",
        ),
    })
    .optional()
    .describe("PGO's switchover trigger, as PGO reports it."),
  pgbackrest: pgbackrestStatus.optional(),
  archive: archiveStatus.optional(),
  rollout: z
    .object({
      phase: z
        .string()
        .describe(
          'Idle, ReplacingReplica, WaitingForInstance, WaitingForUser, SwitchingOver, ReplacingPrimary, Restarting or Halted.',
        ),
      current: z.string().optional().describe('The instance the rollout is at.'),
      updated: z.number().int().describe('Instances whose Pod matches the current spec.'),
      desired: z.number().int(),
      message: z.string().optional(),
    })
    .optional()
    .describe("The rolling update of the instances' Pods (image, resources, restart requests)."),
  majorUpgrade: majorUpgradeStatus.optional(),
});
