/** The PersistentVolumeClaim spec subset the API accepts, shared by data volumes and backup repositories. */
import { NON_NEGATIVE_QUANTITY_PATTERN } from '@kanri/timing';
import { z } from 'zod';

/**
 * A volume claim spec whose field descriptions name the volume (`what`), e.g. "the data volume".
 *
 * @example
 * ```ts
 * const repoVolume = volumeClaimSpec('the repository volume').describe('Claim of the repository volume.');
 * ```
 */
export function volumeClaimSpec(what: string) {
  return z.object({
    accessModes: z.array(z.string()).min(1).describe(`Access modes of ${what}, e.g. [ReadWriteOnce].`),
    storageClassName: z.string().optional().describe(`StorageClass of ${what}; default: the cluster default.`),
    volumeMode: z.string().optional(),
    resources: z
      .object({
        requests: z
          .object({
            storage: z.string().regex(NON_NEGATIVE_QUANTITY_PATTERN).describe(`Size of ${what}, e.g. 20Gi.`),
          })
          .describe('Requested size.'),
      })
      .describe('Must request a storage size.'),
  });
}

const quantity = (description: string) => z.string().regex(NON_NEGATIVE_QUANTITY_PATTERN).max(64).describe(description);

/**
 * A data volume's claim spec: {@link volumeClaimSpec} with PGO's auto-grow, which
 * `resources.limits.storage` turns on (the size the operator may raise the claim to) and `autoGrow`
 * tunes. The operator raises the claim; the spec's request stays the floor.
 *
 * @example
 * ```ts
 * const pgdata = growableVolumeClaimSpec('the data volume');
 * pgdata.parse({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' }, limits: { storage: '8Gi' } } });
 * ```
 */
export function growableVolumeClaimSpec(what: string) {
  return volumeClaimSpec(what)
    .extend({
      resources: z
        .object({
          requests: z
            .object({
              storage: quantity(
                `Size of ${what}, e.g. 20Gi. Raising it expands the claim online, one instance at a time (its StorageClass must allow expansion); it cannot be lowered.`,
              ),
            })
            .describe('Requested size.'),
          limits: z
            .object({
              storage: quantity(
                `The size auto-grow may raise ${what} to (PGO's field): with it, the operator grows the claim when it is autoGrow.trigger percent full.`,
              ).optional(),
            })
            .optional()
            .describe('Upper bound of auto-grow.'),
        })
        .describe('Must request a storage size.'),
      autoGrow: z
        .object({
          trigger: z
            .number()
            .int()
            .min(1)
            .max(99)
            .default(75)
            .describe('How full the volume may be, in percent of its size, before it grows. Default 75, as in PGO.'),
          maxGrow: quantity(
            'The most one step adds. A step adds half the current size (as in PGO), at most this, and never past resources.limits.storage.',
          ).optional(),
        })
        .optional()
        .describe(`Tuning of auto-grow (PGO's field); auto-grow itself is on while resources.limits.storage is set.`),
    })
    .meta({
      'x-kubernetes-validations': [
        {
          rule: '!has(self.autoGrow) || (has(self.resources.limits) && has(self.resources.limits.storage))',
          message: 'autoGrow tunes auto-grow, which resources.limits.storage turns on: set the size it may grow to',
          fieldPath: '.autoGrow',
        },
        {
          rule: '!has(self.resources.limits) || !has(self.resources.limits.storage) || !quantity(self.resources.limits.storage).isLessThan(quantity(self.resources.requests.storage))',
          message:
            'resources.limits.storage, the size auto-grow may reach, must not be less than resources.requests.storage',
          fieldPath: '.resources.limits.storage',
        },
      ],
    });
}
