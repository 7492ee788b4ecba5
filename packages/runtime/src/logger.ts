/** The runtime's structured logger: pino JSON on stdout, with `controller` and `key` bound per reconcile. */
import { type Logger, pino } from 'pino';

export type { Logger };

/** `KANRI_LOG_LEVEL` (default `info`) picks the level. */
export function createLogger(name = 'kanri'): Logger {
  return pino({ name, level: process.env.KANRI_LOG_LEVEL ?? 'info' });
}
