// The figures of `npm run bench:cache` (scripts/bench-cache.mjs): where the API server served the
// lists from, each configuration's medians and ranges, the table and the ratios.
import { median, mib, ratio, round1, send } from '../../scripts/bench-lib.mjs';

/**
 * Where the API server served ConfigMap lists from, summed from its /metrics: list requests
 * (`apiserver_request_total`, verb LIST), lists answered by the watch cache
 * (`apiserver_cache_list_total`), of which consistent reads (no resourceVersion) the cache served
 * once it had caught up with etcd (`apiserver_watch_cache_consistent_read_total`, no fallback)
 * and those it handed to etcd after all (fallback), and ranges read from etcd
 * (`apiserver_storage_list_total`: a list served by etcd, or the one-key read of etcd's current
 * revision that every consistent read from the cache starts with).
 */
export async function listCounters(dispatcher, server) {
  const res = await send(dispatcher, `${server}/metrics`, 'GET');
  if (res.status !== 200) throw new Error(`reading /metrics: HTTP ${res.status}`);
  const counters = {
    listRequests: 0,
    fromWatchCache: 0,
    consistentFromCache: 0,
    consistentFallbacks: 0,
    etcdRanges: 0,
  };
  for (const line of res.text.split('\n')) {
    const name = line.slice(0, line.indexOf('{'));
    if (!line.includes('resource="configmaps"')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (name === 'apiserver_request_total' && labels.verb === 'LIST' && !labels.subresource) {
      counters.listRequests += value;
    } else if (name === 'apiserver_cache_list_total') counters.fromWatchCache += value;
    else if (name === 'apiserver_watch_cache_consistent_read_total' && labels.success === 'true') {
      if (labels.fallback === 'true') counters.consistentFallbacks += value;
      else counters.consistentFromCache += value;
    } else if (name === 'apiserver_storage_list_total') counters.etcdRanges += value;
  }
  return counters;
}

/** Sums up one configuration's runs: medians and ranges over the runs that succeeded. */
export function summarize(runs) {
  const ok = runs.filter((r) => r.ok);
  const pick = (key) => ok.map((r) => r[key]);
  const lists = (key) => [...new Set(ok.map((r) => r.lists?.[key]))];
  return {
    status: ok.length === runs.length ? 'ok' : 'failed',
    syncMs: ok.length ? round1(median(pick('syncMs'))) : null,
    syncMsMin: ok.length ? Math.min(...pick('syncMs')) : null,
    syncMsMax: ok.length ? Math.max(...pick('syncMs')) : null,
    maxRssBytes: ok.length ? median(pick('maxRssBytes')) : null,
    maxRssBytesMin: ok.length ? Math.min(...pick('maxRssBytes')) : null,
    maxRssBytesMax: ok.length ? Math.max(...pick('maxRssBytes')) : null,
    count: ok.length ? ok[0].count : null,
    wallMs: ok.length ? round1(median(pick('wallMs'))) : null,
    // Per run; a list that differs between runs shows as several values.
    listRequests: lists('listRequests'),
    listsFromWatchCache: lists('fromWatchCache'),
    consistentFromCache: lists('consistentFromCache'),
    consistentFallbacks: lists('consistentFallbacks'),
    etcdRanges: lists('etcdRanges'),
    okRuns: ok.length,
    error: runs.find((r) => !r.ok)?.error ?? null,
    runs,
  };
}

/** Prints the table and the ratios of medians; returns the ratios. */
export function printReport({ configs, contenders, summary, lists, managedFieldsModes, expected, pageSize, rounds }) {
  const range = (lo, hi, f) => (lo == null ? '-' : `${f(lo)}–${f(hi)}`);
  const rows = [
    [
      'list',
      'managedFields',
      'contender',
      'sync ms',
      'min–max',
      'peak RSS MiB',
      'min–max',
      'lists: requests/watch cache/consistent/etcd',
    ],
  ];
  for (const c of configs) {
    const s = summary[c.key];
    const isDefault = c.list === c.defaults.list && c.managedFields === c.defaults.managedFields;
    rows.push([
      c.list,
      c.managedFields,
      `${c.name}${isDefault ? ' *' : ''}`,
      s.status === 'ok' ? s.syncMs.toFixed(0) : `FAILED (${s.okRuns}/${rounds} ok)`,
      range(s.syncMsMin, s.syncMsMax, (x) => x.toFixed(0)),
      mib(s.maxRssBytes),
      range(s.maxRssBytesMin, s.maxRssBytesMax, mib),
      [s.listRequests, s.listsFromWatchCache, s.consistentFromCache, s.etcdRanges].map((v) => v.join(',')).join('/'),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log(
    `\nWatch cache sync of ${expected} ConfigMaps (~1 KiB each), pages of ${pageSize}, ${rounds} runs per configuration` +
      ` (medians; * = the library's defaults):\n`,
  );
  for (const row of rows)
    console.log(row.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  for (const c of configs) if (summary[c.key].error) console.log(`  ${c.key}: ${summary[c.key].error}`);

  // Ratios under equal conditions (the same list semantics and managedFields), and between each
  // library's defaults (what an unconfigured informer of each does).
  const ratiosOf = (k, go, cn) => ({
    kanriToClientGoSync: ratio(k?.syncMs, go?.syncMs),
    kanriToClientGoRss: ratio(k?.maxRssBytes, go?.maxRssBytes),
    kanriToClientNodeSync: ratio(k?.syncMs, cn?.syncMs),
    kanriToClientNodeRss: ratio(k?.maxRssBytes, cn?.maxRssBytes),
    clientNodeToClientGoSync: ratio(cn?.syncMs, go?.syncMs),
    clientNodeToClientGoRss: ratio(cn?.maxRssBytes, go?.maxRssBytes),
  });
  const ratios = {};
  for (const list of lists)
    for (const mf of managedFieldsModes) {
      const at = (name) => summary[`${list}/${mf}/${name}`];
      ratios[`${list}/${mf}`] = ratiosOf(at('kanri'), at('client-go'), at('client-node'));
    }
  const atDefaults = (c) => summary[`${c.defaults.list}/${c.defaults.managedFields}/${c.name}`];
  const [go, cn, k] = ['client-go', 'client-node', 'kanri'].map((name) =>
    atDefaults(contenders.find((c) => c.name === name)),
  );
  ratios.defaults = ratiosOf(k, go, cn);
  const x = (v) => (v == null ? '-' : `${v.toFixed(2)}x`);
  console.log('\nRatios of medians, sync / peak RSS (lower is better for the first named):');
  console.log('  conditions        kanri/client-go   kanri/client-node   client-node/client-go');
  for (const [key, r] of Object.entries(ratios)) {
    console.log(
      `  ${key.padEnd(16)}  ${`${x(r.kanriToClientGoSync)} / ${x(r.kanriToClientGoRss)}`.padEnd(16)}  ` +
        `${`${x(r.kanriToClientNodeSync)} / ${x(r.kanriToClientNodeRss)}`.padEnd(18)}  ` +
        `${x(r.clientNodeToClientGoSync)} / ${x(r.clientNodeToClientGoRss)}`,
    );
  }
  return ratios;
}
