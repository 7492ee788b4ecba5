/** spec.ha: the leader Lease and failover limits. */
import { z } from 'zod';
import { HA_DEFAULTS } from '../contract/index.js';

export const ha = z
  .object({
    leaseDurationSeconds: z
      .number()
      .int()
      .min(2)
      .default(HA_DEFAULTS.leaseDurationSeconds)
      .describe('How long a primary lease is valid without renewal. Failover starts after it expires.'),
    renewDeadlineSeconds: z
      .number()
      .int()
      .min(1)
      .default(HA_DEFAULTS.renewDeadlineSeconds)
      .describe('A primary that cannot renew its lease within this time stops accepting writes (fencing).'),
    retryPeriodSeconds: z
      .number()
      .int()
      .min(1)
      .default(HA_DEFAULTS.retryPeriodSeconds)
      .describe('Interval between lease renewals and attempts.'),
    maximumLagOnFailover: z
      .number()
      .int()
      .min(0)
      .default(HA_DEFAULTS.maximumLagOnFailover)
      .describe('A replica lagging more bytes than this is never promoted.'),
    failsafeMode: z
      .boolean()
      .default(HA_DEFAULTS.failsafeMode)
      .describe(
        'While the API server cannot be reached, the primary keeps taking writes as long as every other instance confirms over the peer API that it follows it (and then refuses to take over for a lease duration). Off, an outage longer than the renew deadline stops the primary (fencing). See the README for when to turn it off.',
      ),
    synchronous: z
      .object({
        number: z
          .number()
          .int()
          .min(1)
          .default(1)
          .describe('How many replicas must have each commit before it is acknowledged.'),
      })
      .optional()
      .describe(
        'Synchronous replication: a commit is acknowledged only once `number` replicas have it, and only those replicas may be promoted, so no acknowledged commit is lost on failover (RPO 0). Commits wait while fewer replicas are healthy.',
      ),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'self.renewDeadlineSeconds < self.leaseDurationSeconds',
        message: 'renewDeadlineSeconds must be less than leaseDurationSeconds',
        fieldPath: '.renewDeadlineSeconds',
      },
      {
        // The elector's own rule (runtime's electionTimingProblems): more than one renewal try per deadline.
        rule: 'self.retryPeriodSeconds * 6 < self.renewDeadlineSeconds * 5',
        message:
          'renewDeadlineSeconds must exceed 1.2 × retryPeriodSeconds (the leader election polls every retryPeriod, jittered up to 1.2×)',
        fieldPath: '.retryPeriodSeconds',
      },
    ],
  })
  .describe('High availability: the leader lease and failover limits.');
