/**
 * The agent's logger: pino JSON on stdout, where every line passes through the redactor before it
 * is written, so a secret cannot reach the log whatever field or error message carries it.
 */
import { type Logger, pino } from 'pino';
import type { Redactor } from './redactor.js';

export type { Logger };

/** A destination stream for pino that masks secrets in each serialized line. */
export function redactingStream(redactor: Redactor, out: { write(chunk: string): unknown } = process.stdout) {
  return { write: (line: string) => out.write(redactor.redact(line)) };
}

/** `KANRI_LOG_LEVEL` (default `info`) picks the level. */
export function createAgentLogger(redactor: Redactor, bindings: Record<string, string>): Logger {
  return pino(
    { name: 'kanri-agent', level: process.env.KANRI_LOG_LEVEL ?? 'info', base: bindings },
    redactingStream(redactor),
  );
}
