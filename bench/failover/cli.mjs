// What bench:failover and bench:failures share on their command line and in their timing: the
// side-by-side options, and the renew period both systems run on.
import { parseArgs } from 'node:util';
import { KANRI_HA } from './kanri.mjs';
import { PATRONI_DCS, PATRONI_SYSTEMS } from './patroni-release.mjs';
import { WAL_SEGMENT_MODES } from './wal-segments.mjs';

/** Every `--systems` entry: Patroni 4 (`patroni`), Kanri, and Debian's Patroni 3.0.2 as an extra column. */
export const SYSTEMS = ['patroni', 'kanri', ...PATRONI_SYSTEMS.filter((s) => s !== 'patroni')];

/**
 * Parses `--trials N --sync --systems patroni,kanri[,patroni3] --seed N --wal-segments equal|default
 * --[no-]patroni-failsafe` and the script's `extra` options;
 * prints `usage` and exits (0 for --help, 2 when invalid or `valid(values)` is false).
 *
 * @example
 * const { values, trials, seed, systems } = parseSideBySide({ defaultTrials: '10', usage: 'node x.mjs [--trials 10]' });
 */
export function parseSideBySide({ defaultTrials, usage, extra = {}, valid = () => true }) {
  const { values } = parseArgs({
    // --no-patroni-failsafe
    allowNegative: true,
    options: {
      trials: { type: 'string', default: process.env.BENCH_TRIALS ?? defaultTrials },
      sync: { type: 'boolean', default: false },
      systems: { type: 'string', default: process.env.BENCH_SYSTEMS ?? 'patroni,kanri' },
      seed: { type: 'string', default: '1' },
      // equal: Patroni's clusters get Kanri's WAL segment size; default: each its own (wal-segments.mjs).
      'wal-segments': { type: 'string', default: 'equal' },
      // Patroni's failsafe_mode, on as its documentation recommends (patroni.mjs); off: --no-patroni-failsafe.
      'patroni-failsafe': { type: 'boolean', default: true },
      help: { type: 'boolean', default: false },
      ...extra,
    },
  });
  const trials = Number(values.trials);
  const seed = Number(values.seed);
  const systems = values.systems.split(',').map((s) => s.trim());
  if (
    values.help ||
    !Number.isInteger(trials) ||
    trials < 1 ||
    !Number.isInteger(seed) ||
    systems.length < 1 ||
    !systems.every((s) => SYSTEMS.includes(s)) ||
    new Set(systems).size !== systems.length ||
    !WAL_SEGMENT_MODES.includes(values['wal-segments']) ||
    !valid(values)
  ) {
    console.error(`usage: ${usage}`);
    process.exit(values.help ? 0 : 2);
  }
  return { values, trials, seed, systems };
}

/** The leaders' renew period in ms, which must be the same for both systems (the kill offsets spread over it). */
export function renewPeriodMs() {
  const ms = KANRI_HA.retryPeriodSeconds * 1000;
  if (ms !== PATRONI_DCS.loop_wait * 1000) throw new Error('Kanri and Patroni must renew on the same period');
  return ms;
}
