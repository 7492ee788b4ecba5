// Fills the bench cluster's database to about `bytes` (a table of 250-byte rows, in 64 MiB
// transactions), so that a major upgrade's downtime is measured on a database of a stated size.
import pg from 'pg';

/** Resolves the database's size in bytes once it is at least `bytes`. */
export async function loadData(address, { user, password, database }, bytes, log = () => {}) {
  const [host, port] = address.split(':');
  const client = new pg.Client({ host, port: Number(port), user, password, database });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS kanri_bench_bulk (id bigint, pad text)');
    const size = async () => Number((await client.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b);
    const rows = 250_000; // about 64 MiB a transaction
    let next = 0;
    for (let current = await size(); current < bytes; current = await size()) {
      await client.query(
        `INSERT INTO kanri_bench_bulk SELECT g, repeat(md5(g::text), 6) FROM generate_series($1::bigint, $2::bigint) g`,
        [next, next + rows - 1],
      );
      next += rows;
      log(`  loaded ${(current / 2 ** 20).toFixed(0)} MiB of ${(bytes / 2 ** 20).toFixed(0)}`);
    }
    return await size();
  } finally {
    await client.end();
  }
}
