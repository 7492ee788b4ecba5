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
