// One trial of each kind the backup benchmark pairs: a full backup through Kanri (the annotation,
// then the PostgresBackup's own record) or by hand (the same pgBackRest command the agent runs),
// a restore through Kanri (a clone cluster) or by hand (into an empty directory), and a pgbench
// run with or without a backup running beside it.
import { chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../packages/testenv/dist/src/index.js';
import { backupInfo, pgbackrest, pgbench, postgresIds } from './commands.mjs';
import {
  agentContainer,
  annotateBackup,
  backupResource,
  backupsOf,
  clusterManifest,
  clusters,
  NS,
  waitReady,
} from './kanri.mjs';

const MB = 1e6;
const mbps = (bytes, ms) => (bytes && ms ? Math.round((bytes / MB / (ms / 1000)) * 10) / 10 : null);

/** Annotates the cluster with `value`; resolves the new PostgresBackup once it reached `phase` (Running or Succeeded). */
async function manualBackup(env, cluster, value, phase = 'Succeeded') {
  const known = new Set((await backupsOf(env, cluster)).map((b) => b.metadata.name));
  const annotatedAt = Date.now();
  await annotateBackup(env, cluster, value);
  const wanted = phase === 'Running' ? ['Running', 'Succeeded'] : ['Succeeded'];
  const backup = await waitFor(
    `the PostgresBackup for ${value} to be ${phase}`,
    async () => {
      const b = (await backupsOf(env, cluster)).find(
        (x) => !known.has(x.metadata.name) && x.spec?.trigger === 'annotation',
      );
      if (b?.status?.phase === 'Failed') throw new Error(`backup ${b.metadata.name} failed: ${b.status.message}`);
      return wanted.includes(b?.status?.phase) ? b : undefined;
    },
    1_800_000,
    phase === 'Running' ? 200 : 500,
  );
  return { backup, annotatedAt, seenAt: Date.now() };
}

/** Waits for PostgresBackup `name` to end; resolves it (Succeeded) or throws (Failed). */
async function backupEnded(env, name) {
  return waitFor(
    `PostgresBackup ${name} to end`,
    async () => {
      const b = await backupResource(env).get(name, { namespace: NS });
      if (b.status?.phase === 'Failed') throw new Error(`backup ${name} failed: ${b.status.message}`);
      return b.status?.phase === 'Succeeded' ? b : undefined;
    },
    1_800_000,
    500,
  );
}

/** A full backup through Kanri: timed by the PostgresBackup's startedAt → completedAt, sized by pgBackRest. */
export async function kanriBackup(env, cluster, value) {
  const { backup, annotatedAt, seenAt } = await manualBackup(env, cluster, value);
  const s = backup.status;
  const ms = Date.parse(s.completedAt) - Date.parse(s.startedAt);
  return {
    name: backup.metadata.name,
    type: backup.spec.type,
    options: backup.spec.options ?? [],
    label: s.label,
    sizeBytes: s.sizeBytes,
    repoSizeBytes: s.repoSizeBytes ?? null,
    ms,
    MBps: mbps(s.sizeBytes, ms),
    pgbackrestSeconds: Number.parseInt(s.duration, 10),
    annotationToSucceededMs: seenAt - annotatedAt,
  };
}

/** The same full backup by hand: the agent's command line, as the postgres user, timed around the process. */
export async function handBackup(agent) {
  const known = new Set((await backupInfo(agent)).map((b) => b.label));
  // What the agent runs for a manual backup with options ['--type=full'] (primary-backups.ts: the
  // operator moves --type into the PostgresBackup's spec.type, and no other option is left).
  const { ms, cpuSeconds } = await pgbackrest(agent, ['--repo=1', '--type=full', 'backup'], { cpu: true });
  const made = (await backupInfo(agent)).filter((b) => !known.has(b.label)).at(-1);
  if (!made) throw new Error('the hand backup made no backup that pgbackrest info lists');
  return {
    label: made.label,
    sizeBytes: made.info?.size ?? null,
    repoSizeBytes: made.info?.repository?.size ?? null,
    ms,
    MBps: mbps(made.info?.size, ms),
    pgbackrestSeconds: made.timestamp.stop - made.timestamp.start,
    cpuSeconds: cpuSeconds ?? null,
  };
}

/** The agent's log lines (pino JSON) with message `msg`. */
async function logLines(container, msg) {
  const text = await readFile(container.logFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.includes(msg))
    .flatMap((l) => {
      try {
        const o = JSON.parse(l);
        return o.msg === msg ? [o] : [];
      } catch {
        return [];
      }
    });
}

/**
 * A restore through Kanri: a one-instance clone of `source` from its repo (latest backup, then the
 * archive). Times from the create to the agent's 'files restored' line (so Pod scheduling and start,
 * the agent's start and the restore command) and that line's own `ms` (the restore command alone).
 * The clone is deleted again before this resolves.
 */
export async function kanriRestore(env, source, clone, sizeBytes, log) {
  const createdAt = Date.now();
  await clusters(env.client).create(
    clusterManifest(clone, 1, { dataSource: { postgresCluster: { clusterName: source, repoName: 'repo1' } } }),
  );
  try {
    const restored = await waitFor(
      `clone ${clone}: files restored`,
      async () => {
        const container = env.cp.processNodes
          .flatMap((n) => n.containers())
          .find((c) => c.namespace === NS && c.pod.startsWith(`${clone}-`) && !c.init);
        if (!container) return undefined;
        const failed = (await logLines(container, 'restore failed')).at(-1);
        if (failed) throw new Error(`clone ${clone}: restore failed: ${failed.reason}`);
        const done = (await logLines(container, 'files restored; recovering from the archive')).at(-1);
        const started = (await logLines(container, 'restoring')).at(-1);
        return done && started ? { container, done, started } : undefined;
      },
      1_800_000,
      500,
    );
    await waitReady(env.client, clone, 1, 600_000);
    const readyAt = Date.now();
    const promoted = (await logLines(restored.container, 'restored and promoted')).at(-1);
    const endToEndMs = restored.done.time - createdAt;
    return {
      clone,
      createToRestoreStartMs: restored.started.time - createdAt,
      restoreCommandMs: restored.done.ms,
      createToFilesRestoredMs: endToEndMs,
      restoreAndRecoveryMs: promoted?.ms ?? null,
      createToReadyMs: readyAt - createdAt,
      MBps: mbps(sizeBytes, endToEndMs),
      commandMBps: mbps(sizeBytes, restored.done.ms),
    };
  } finally {
    await deleteCluster(env, clone, log);
  }
}

async function deleteCluster(env, name, log) {
  await clusters(env.client)
    .delete(name, { namespace: NS })
    .catch((error) => log(`deleting ${name}: ${error.message}`));
  await waitFor(
    `${name}'s Pods to stop`,
    async () => (agentContainer(env, name) ? undefined : true),
    120_000,
    500,
  ).catch((error) => log(error.message));
  // Its volume is removed asynchronously (the provisioner's reclaim, ~1 GB of files): wait, so that
  // the removal does not run beside the next trial (the hand restore removes its directory too).
  await waitFor(
    `${name}'s volumes to be removed`,
    async () => {
      const volumes = await env.client.resource('v1', 'PersistentVolume').list();
      return volumes.items.some((v) => v.spec?.claimRef?.namespace === NS && v.spec.claimRef.name?.includes(name))
        ? undefined
        : true;
    },
    180_000,
    1_000,
  ).catch((error) => log(error.message));
}

/** The same restore by hand: the agent's command, as the postgres user, into an empty directory. */
export async function handRestore(agent, sizeBytes) {
  const dir = await mkdtemp(join(tmpdir(), 'kanri-bench-restore-'));
  try {
    const { uid, gid } = postgresIds();
    const pgdata = join(dir, 'pgdata');
    await mkdir(pgdata, { mode: 0o700 });
    await chown(dir, uid, gid);
    await chown(pgdata, uid, gid);
    // restore.ts: --repo, --pg1-path and no --delta for an empty directory.
    const { ms, cpuSeconds } = await pgbackrest(agent, ['--repo=1', `--pg1-path=${pgdata}`, 'restore'], { cpu: true });
    return { commandMs: ms, MBps: mbps(sizeBytes, ms), cpuSeconds: cpuSeconds ?? null };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * pgbench for `seconds` (4 clients, 2 threads, -N, no vacuum), with a full backup through Kanri
 * running beside it or not. With one, pgbench starts once the backup is Running; the result says
 * how much of the pgbench window the backup covered.
 */
export async function tpsRun(env, cluster, target, seconds, value) {
  const args = ['-c', '4', '-j', '2', '-T', String(seconds), '-N', '-n'];
  if (!value) return { withBackup: false, ...(await pgbench(target, args)) };
  const { backup } = await manualBackup(env, cluster, value, 'Running');
  const from = Date.now();
  const bench = await pgbench(target, args);
  const to = Date.now();
  const ended = await backupEnded(env, backup.metadata.name);
  const covered =
    Math.max(
      0,
      Math.min(to, Date.parse(ended.status.completedAt)) - Math.max(from, Date.parse(ended.status.startedAt)),
    ) /
    (to - from);
  return {
    withBackup: true,
    ...bench,
    backup: ended.status.label,
    backupCoveredFraction: Math.round(covered * 100) / 100,
  };
}
