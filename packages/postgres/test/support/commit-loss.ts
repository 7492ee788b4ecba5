/**
 * What a failover cost in acknowledged commits: which of them a new primary lacks, and where its
 * history forked from the old primary's (the switch point in its timeline history file), so a test
 * can hold the loss to the bound the README promises.
 */
import { parseLsn } from '../../src/agent/plan/lsn.js';
import { type Ack, sql } from './failover-env.js';

/**
 * The acknowledged commits among `acks` that the instance at `host` does not have. Pass every
 * acknowledgement recorded so far, those received during and after the crash included: those are
 * the ones most at risk.
 */
export async function lostCommits(host: string, password: string, acks: readonly Ack[]): Promise<Ack[]> {
  if (acks.length === 0) return [];
  // A loop, not Math.max(...acks): a spread of 100,000s of arguments overflows the stack.
  const top = acks.reduce((max, a) => Math.max(max, a.n), 0);
  const rows = await sql<{ n: string }>(host, password, 'SELECT n FROM seq WHERE n <= $1', [top]);
  const present = new Set(rows.map((r) => Number(r.n)));
  return acks.filter((a) => !present.has(a.n));
}

export interface Fork {
  /** The timeline the promotion started. */
  readonly timeline: number;
  /** Where it branched off its parent: the parent's WAL past this point is not in this history. */
  readonly lsn: string;
}

/** The last fork in the history of the primary at `host`: read from its newest timeline history file. */
export async function forkOf(host: string, password: string): Promise<Fork> {
  const [row] = await sql<{ file: string }>(host, password, 'SELECT pg_walfile_name(pg_current_wal_lsn()) AS file');
  const timeline = Number.parseInt((row?.file ?? '').slice(0, 8), 16);
  const name = `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
  const [history] = await sql<{ text: string }>(host, password, 'SELECT pg_read_file($1) AS text', [name]);
  // Each line: parent timeline, switch point, reason. The last line is the newest switch.
  const last = (history?.text ?? '')
    .split('\n')
    .filter((line) => /^\d+\t/.test(line))
    .at(-1);
  const lsn = last?.split('\t')[1] ?? '';
  if (!timeline || parseLsn(lsn) === undefined)
    throw new Error(`no fork point in ${name} on ${host}: ${history?.text}`);
  return { timeline, lsn };
}

/** Bytes of WAL from `from` to `to` (negative when `to` is before `from`). */
export function walBytes(from: string, to: string): number {
  const a = parseLsn(from);
  const b = parseLsn(to);
  if (a === undefined || b === undefined) throw new Error(`not an LSN: ${from} or ${to}`);
  return b - a;
}

/** What one crash cost under asynchronous replication, against the bound the README promises. */
export interface AsyncLoss {
  /** Bytes of WAL from the fork to the furthest lost commit (0 when none was lost). */
  readonly walBytes: number;
  /** Each way the loss broke the bound; empty when it kept to it. */
  readonly problems: string[];
}

/**
 * Holds the commits a crash lost to the asynchronous bound: each was acknowledged by the crashed
 * primary (`crashedHost`), lies past the new timeline's fork (the new primary never had it, not a
 * commit it dropped), and no more than `boundBytes` (`ha.maximumLagOnFailover`) past it.
 *
 * @example
 * asyncLoss([{ n: 7, at: 0, host: '10.0.0.1', lsn: '0/3000100' }], '10.0.0.1', '0/3000000', 16 << 20);
 * // { walBytes: 256, problems: [] }
 */
export function asyncLoss(lost: readonly Ack[], crashedHost: string, forkLsn: string, boundBytes: number): AsyncLoss {
  const problems: string[] = [];
  let furthest = 0;
  for (const a of lost) {
    if (a.host !== crashedHost)
      problems.push(`lost commit ${a.n} was acknowledged by ${a.host}, not the crashed primary`);
    const past = walBytes(forkLsn, a.lsn);
    if (past <= 0) problems.push(`lost commit ${a.n} (${a.lsn}) lies at or before the fork at ${forkLsn}`);
    furthest = Math.max(furthest, past);
  }
  if (furthest > boundBytes)
    problems.push(`${furthest} bytes of acknowledged WAL lost, more than maximumLagOnFailover (${boundBytes})`);
  return { walBytes: furthest, problems };
}
