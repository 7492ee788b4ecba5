// Row 6 of bench:peers: a full backup of 1 GB to the S3 server and a restore of it into a new
// cluster, timed from outside each system alike. The driver loads the data through the system's
// read-write Service, asks the system for a backup by its own interface, and creates the restored
// cluster through it; what counts as done is what a user would check: the system says the backup
// is complete, and the new cluster answers with every row.
import { connectTo } from '../failover/writer.mjs';

/** The database size the row backs up (pg_database_size of the database written). */
export const BACKUP_BYTES = 1e9;
const BULK = 'kanri_bench_bulk';
/** Rows per INSERT: ~65 MB each, so progress shows and no statement runs for minutes. */
const CHUNK_ROWS = 500_000;
const MB = 1e6;

const mbps = (bytes, ms) => (bytes && ms ? Math.round((bytes / MB / (ms / 1000)) * 10) / 10 : null);

/** Runs `sql` once over a connection that allows long statements (the writer's allows 5 s). */
async function query(target, sql, params = []) {
  const client = await connectTo(target.address, target, 5_000, 15 * 60_000);
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Fills the cluster's database to `bytes` with rows of hex text (about half of it compresses
 * away, as ordinary table data does), then waits until the WAL it wrote is archived, so that no
 * backup starts behind an archive backlog. Resolves the database's size and the rows written.
 *
 * @param {import('./system.mjs').WriteTarget} target
 * @param {{ bytes?: number, log: (message: string) => void, name: string }} options
 */
export async function loadBulk(target, { bytes = BACKUP_BYTES, log, name }) {
  await query(target, `create table if not exists ${BULK} (id bigint, a text, b text, c text)`);
  const size = async () => Number((await query(target, 'select pg_database_size(current_database()) as s'))[0].s);
  let rows = Number((await query(target, `select count(*) as n from ${BULK}`))[0].n);
  const started = performance.now();
  for (let now = await size(); now < bytes; now = await size()) {
    await query(
      target,
      `insert into ${BULK} select g, md5(g::text), md5((-g)::text), md5((g * 7)::text) from generate_series($1::bigint, $2::bigint) g`,
      [rows + 1, rows + CHUNK_ROWS],
    );
    rows += CHUNK_ROWS;
    log(`  ${name}: loaded ${(now / MB).toFixed(0)} of ${(bytes / MB).toFixed(0)} MB`);
  }
  const databaseBytes = await size();
  log(`  ${name}: ${(databaseBytes / MB).toFixed(0)} MB in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  await waitArchived(target, { log, name });
  return { databaseBytes, rows };
}

/** Switches to a new WAL segment and waits until the one it closed is archived. */
export async function waitArchived(target, { log, name, timeoutMs = 15 * 60_000 }) {
  const [{ segment }] = await query(target, 'select pg_walfile_name(pg_switch_wal()) as segment');
  const deadline = performance.now() + timeoutMs;
  let last = '';
  for (;;) {
    const [{ archived, failed }] = await query(
      target,
      'select last_archived_wal as archived, last_failed_wal as failed from pg_stat_archiver',
    );
    // Same timeline: WAL file names order as their positions do.
    if (archived && archived >= segment) return;
    if (performance.now() > deadline)
      throw new Error(
        `${name}: WAL ${segment} not archived after ${timeoutMs} ms (last ${archived}, failed ${failed})`,
      );
    if (archived !== last) {
      last = archived;
      log(`  ${name}: archived up to ${archived ?? 'nothing'}, waiting for ${segment}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** Bytes under `prefix` in the bucket (objects the system wrote). */
async function storedBytes(s3Server, bucket, prefix) {
  return (await s3Server.listObjects(bucket, prefix)).reduce((sum, o) => sum + o.size, 0);
}

/**
 * One trial for one system: a full backup of `source`, then a one-instance cluster restored from
 * it, timed from the create until it is Ready and answers with every row; the restored cluster is
 * deleted again (with its volume) before this resolves. Never throws: a failure is a failed trial.
 *
 * @param {import('./system.mjs').PeerEnv} env
 * @param {{ system: import('./system.mjs').PeerSystem, cluster: import('./system.mjs').PeerCluster, spec: import('./system.mjs').ClusterSpec, loaded: { databaseBytes: number, rows: number } }} source
 * @param {number} trial
 * @param {{ log: (message: string) => void, s3Server: { listObjects(bucket: string, prefix?: string): Promise<{ size: number }[]> } }} options
 */
export async function runBackupTrial(env, source, trial, { log, s3Server }) {
  const { system, cluster, spec, loaded } = source;
  const prefix = system.backupPrefix?.(spec) ?? '';
  const bucket = env.s3?.bucket ?? '';
  const result = { trial, databaseBytes: loaded.databaseBytes };
  let restored;
  try {
    const before = await storedBytes(s3Server, bucket, prefix);
    const asked = performance.now();
    if (!cluster.backup) throw new Error(`${system.name} has no backup()`);
    const { systemMs } = await cluster.backup(`peers-${trial}`);
    const backupMs = Math.round(performance.now() - asked);
    const stored = (await storedBytes(s3Server, bucket, prefix)) - before;
    log(
      `  ${system.name} row 6 trial ${trial}: backup in ${(backupMs / 1000).toFixed(1)} s ` +
        `(${mbps(loaded.databaseBytes, backupMs)} MB/s; the system's own record ${systemMs == null ? '-' : `${(systemMs / 1000).toFixed(1)} s`}), ` +
        `${(stored / MB).toFixed(0)} MB stored`,
    );
    const restoreSpec = {
      name: `restored-${trial}`,
      namespace: spec.namespace,
      instances: 1,
      synchronous: false,
      storage: spec.storage,
      restoreFrom: spec.name,
    };
    const created = performance.now();
    restored = await system.createCluster(env, restoreSpec);
    await restored.waitReady(30 * 60_000);
    const target = await restored.writeTarget();
    const [{ n }] = await query(target, `select count(*) as n from ${BULK}`);
    if (Number(n) !== loaded.rows) throw new Error(`the restored cluster has ${n} rows, not ${loaded.rows}`);
    const restoreMs = Math.round(performance.now() - created);
    log(
      `  ${system.name} row 6 trial ${trial}: restored and Ready with every row in ${(restoreMs / 1000).toFixed(1)} s ` +
        `(${mbps(loaded.databaseBytes, restoreMs)} MB/s)`,
    );
    return {
      ...result,
      ok: true,
      backupMs,
      systemBackupMs: systemMs,
      backupMBps: mbps(loaded.databaseBytes, backupMs),
      storedBytes: stored,
      restoreMs,
      restoreMBps: mbps(loaded.databaseBytes, restoreMs),
    };
  } catch (error) {
    log(`  ${system.name} row 6 trial ${trial}: FAILED: ${error.message}`);
    return { ...result, ok: false, error: error.message };
  } finally {
    await restored?.delete().catch((error) => log(`  ${system.name}: deleting restored-${trial}: ${error.message}`));
  }
}
