#!/usr/bin/env node
// Where a Kanri failover's first ~100 ms go, from the instances' logs (the agent's JSON lines, with
// postgres's own lines inside them): for every "took over the leader Lease", the steps on the new
// primary (Lease → pg_promote → "selected new timeline" → "archive recovery complete" → "ready to
// accept connections"), and on each other replica the first stream from the new timeline and the
// refusals before it. Run with `node scripts/failover-breakdown.mjs LOG...` on copies of
// `<testenv>/process-nodes/*/logs/*/postgres.log` taken during a bench:failover run (testenv
// deletes them at its end); see bench/README.md. The last line is one JSON object.
import { readFileSync } from 'node:fs';

const PG_TIME = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC/;

/** Every line of every file as { pod, atMs, msg, pg }, oldest first. */
function readLines(files) {
  const lines = [];
  for (const file of files) {
    for (const raw of readFileSync(file, 'utf8').split('\n')) {
      if (!raw.startsWith('{')) continue;
      let entry;
      try {
        entry = JSON.parse(raw);
      } catch {
        continue; // a line cut off by the copy
      }
      const pg = entry.component === 'postgres' ? PG_TIME.exec(entry.msg ?? '') : null;
      // postgres's own clock for its lines: the agent stamps them when it reads them.
      const atMs = pg ? Date.parse(`${pg[1].replace(' ', 'T')}Z`) : entry.time;
      lines.push({ pod: entry.pod, atMs, msg: entry.msg ?? '', pg: Boolean(pg), raw: entry });
    }
  }
  // The same line can be in two copies of one log (the copy of a Pod that came back).
  const seen = new Set();
  return lines
    .filter((l) => {
      const key = `${l.pod} ${l.atMs} ${l.msg}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.atMs - b.atMs);
}

const WINDOW_MS = 5_000;
const median = (xs) => {
  const s = xs.filter((x) => x != null).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const lines = readLines(process.argv.slice(2));
if (lines.length === 0) {
  console.error('usage: node scripts/failover-breakdown.mjs LOG...');
  process.exit(2);
}
const takeovers = lines.filter((l) => l.msg === 'FAILOVER: took over the leader Lease');
const failovers = takeovers.map((t) => {
  const after = (pod, test) =>
    lines.find((l) => l.pod === pod && l.atMs >= t.atMs && l.atMs < t.atMs + WINDOW_MS && test(l));
  const since = (l) => (l ? l.atMs - t.atMs : null);
  const mine = (text) => since(after(t.pod, (l) => l.msg.includes(text)));
  const timeline = /selected new timeline ID: (\d+)/.exec(
    after(t.pod, (l) => /selected new timeline/.test(l.msg))?.msg ?? '',
  )?.[1];
  // The former primary is down (or rewinding): only the replicas that followed along count.
  const former = t.raw.from;
  const others = [...new Set(lines.filter((l) => l.pod && l.pod !== t.pod && l.pod !== former).map((l) => l.pod))];
  const replicas = Object.fromEntries(
    others.map((pod) => {
      const streamed = after(
        pod,
        (l) =>
          timeline &&
          new RegExp(`(started streaming WAL|restarted WAL streaming) .* on timeline ${timeline}\\b`).test(l.msg),
      );
      const refusals = lines.filter(
        (l) =>
          l.pod === pod &&
          l.atMs >= t.atMs &&
          l.atMs < (streamed?.atMs ?? t.atMs + WINDOW_MS) &&
          /does not exist|has already been removed/.test(l.msg),
      ).length;
      // The WAL receiver's first contact after the take-over, from any timeline: on the path to
      // the first commit in synchronous mode.
      const connected = after(pod, (l) => /started streaming WAL|fetching timeline history/.test(l.msg));
      return [pod, { connectedMs: since(connected), streamedMs: since(streamed), refusals }];
    }),
  );
  return {
    at: new Date(t.atMs).toISOString(),
    pod: t.pod,
    // postgres's own line: the agent logs its request once pg_promote() has answered.
    promoteRequestMs: mine('received promote request'),
    newTimelineMs: mine('selected new timeline'),
    recoveryCompleteMs: mine('archive recovery complete'),
    acceptingMs: mine('ready to accept connections'),
    slotsMs: mine('created a replication slot'),
    syncConfiguredMs: mine('synchronous standbys configured'),
    syncStandbyMs: mine('is now a synchronous standby'),
    replicas,
  };
});
for (const f of failovers) {
  const r = Object.entries(f.replicas)
    .map(
      ([pod, x]) =>
        `${pod} connects +${x.connectedMs ?? '-'}, streams +${x.streamedMs ?? '-'} ms after ${x.refusals} refusals`,
    )
    .join('; ');
  console.error(
    `${f.at} ${f.pod}: promote request +${f.promoteRequestMs}, new timeline +${f.newTimelineMs}, recovery complete +${f.recoveryCompleteMs}, accepting +${f.acceptingMs}, first slot +${f.slotsMs ?? '-'}${f.syncConfiguredMs != null ? `, sync configured +${f.syncConfiguredMs}` : ''}; ${r}`,
  );
}
const streams = failovers.flatMap((f) => Object.values(f.replicas).map((x) => x.streamedMs));
const summary = {
  failovers: failovers.length,
  medianMs: {
    promoteRequest: median(failovers.map((f) => f.promoteRequestMs)),
    newTimeline: median(failovers.map((f) => f.newTimelineMs)),
    copyStep: median(
      failovers.map((f) => (f.recoveryCompleteMs ?? NaN) - (f.newTimelineMs ?? NaN)).filter(Number.isFinite),
    ),
    recoveryComplete: median(failovers.map((f) => f.recoveryCompleteMs)),
    accepting: median(failovers.map((f) => f.acceptingMs)),
    firstSlot: median(failovers.map((f) => f.slotsMs)),
    syncStandby: median(failovers.map((f) => f.syncStandbyMs)),
    replicaConnects: median(failovers.flatMap((f) => Object.values(f.replicas).map((x) => x.connectedMs))),
    replicaStreams: median(streams),
  },
  replicaStreamsOver500Ms: streams.filter((s) => s == null || s > 500).length,
  replicaStreams: streams.length,
  failoversDetail: failovers,
};
console.log(JSON.stringify(summary));
