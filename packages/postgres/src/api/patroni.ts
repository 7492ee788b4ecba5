/**
 * spec.patroni: PGO's Patroni settings. Kanri does not run Patroni; it takes only the switchover
 * trigger from here (operator/switchover/pgo-trigger-plan.ts), and refuses the rest by name
 * (pgo-fields.ts).
 */
import { z } from 'zod';

export const patroni = z
  .object({
    switchover: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe(
            'Serve annotation postgres-operator.crunchydata.com/trigger-switchover: each new value is one switchover.',
          ),
        targetInstance: z
          .string()
          .min(1)
          .max(63)
          .optional()
          .describe(
            "The replica Pod to hand the primary role to. Default: the best replica (Kanri's switchover picks it).",
          ),
        type: z
          .string()
          .default('Switchover')
          .meta({
            'x-kubernetes-validations': [
              {
                rule: "self == 'Switchover'",
                message:
                  "only Switchover: PGO's Failover (promoting targetInstance while the primary is down) is not implemented by Kanri, which fails over by itself when the primary is lost",
              },
            ],
          })
          .describe('Switchover (the only type Kanri takes).'),
      })
      .optional()
      .describe(
        "PGO's switchover trigger, served by Kanri's switchover (as annotation postgres.kanri.dev/switchover is); status.patroni.switchover shows the value last served.",
      ),
  })
  .optional()
  .describe(
    "PGO's Patroni settings: Kanri does not run Patroni, and takes only switchover from here (its high-availability settings are spec.ha).",
  );
