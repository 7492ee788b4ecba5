/** Parsers for command-line option values, with errors that name the flag and the bad value. */
import { InvalidArgumentError } from 'commander';

export function parseNodeCount(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n > 100) {
    throw new InvalidArgumentError(`--nodes must be a whole number from 0 to 100, got "${value}"`);
  }
  return n;
}

/** Resolves on the first SIGINT or SIGTERM, with the signal's name. */
export function waitForShutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}
