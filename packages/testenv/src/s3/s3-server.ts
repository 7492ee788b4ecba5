/**
 * A real S3 server for backup tests: versitygw on 127.0.0.1 (or the real nodes' bridge), TLS with a throwaway CA, objects
 * stored as plain files a test can inspect or damage.
 *
 * Guarantees: the server is a ManagedProcess, ended by PID (never by name) and killed with this
 * process; `stop()` resolves once it has exited; `restart()` brings it back on the same port with
 * the same data and credentials; `close()` also removes its directory, and a directory left by a
 * killed test process is removed by the next start.
 * Caveats: another process may take the port while the server is stopped; `restart()` then fails
 * loudly with versitygw's log.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { ensureVersitygw } from '../binaries/ensure-binaries.js';
import { buildVersitygwCommand, VERSITYGW_HEALTH_PATH } from '../components/versitygw.js';
import { createCertificateAuthority } from '../credentials/pki.js';
import { freePort, LOOPBACK } from '../free-port.js';
import { type ManagedProcess, startProcess } from '../managed-process.js';
import { DATA_DIR_PREFIX, sweepStaleDataDirs, writeOwnerPid } from '../stale-data-dirs.js';
import { waitHealthy } from '../wait-healthy.js';
import { S3Client, type S3ObjectInfo } from './s3-client.js';

export interface S3ServerOptions {
  /**
   * The local IPv4 address to listen on; default 127.0.0.1. Real nodes' Pods reach the host only
   * at its bridge address, so a control plane with real nodes passes that one.
   */
  readonly address?: string;
  /** Default `us-east-1`. */
  readonly region?: string;
  /** Where the server's directory is created; default the OS temp dir. */
  readonly baseDir?: string;
  /** The versitygw binary; default the pinned one (`ensureVersitygw`). */
  readonly binary?: string;
  /** How long to wait for the server to answer; default 60 s (a loaded machine is slow). */
  readonly timeoutMs?: number;
}

/** A running (or stopped, between `stop()` and `restart()`) S3 server. */
export interface S3Server {
  /**
   * `https://<host>:<port>`. The certificate holds `DNS:localhost` and the address listened on
   * (`IP:127.0.0.1` by default).
   */
  readonly endpoint: string;
  /** `localhost` on loopback, else the address listened on (what pgBackRest's `repo1-s3-endpoint` takes). */
  readonly host: string;
  readonly port: number;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The CA certificate's PEM file, readable by every local user (the `postgres` OS user too). */
  readonly caFile: string;
  readonly caPem: string;
  /** Where objects live as plain files: `<dataDir>/<bucket>/<key>`. */
  readonly dataDir: string;
  /** The server's log file. */
  readonly logFile: string;
  /** The current server process's PID (that of the last one after `stop()`). */
  readonly pid: number;
  readonly running: boolean;
  createBucket(name: string): Promise<void>;
  putObject(bucket: string, key: string, body: Buffer | string): Promise<void>;
  getObject(bucket: string, key: string): Promise<Buffer>;
  /** Every object under `prefix`, with its size, in key order. */
  listObjects(bucket: string, prefix?: string): Promise<S3ObjectInfo[]>;
  /** Ends the server by PID and waits for it to exit; its data stays for `restart()`. Safe to call twice. */
  stop(): Promise<void>;
  /** Starts the server again (stopping it first if it runs): same port, data and credentials. */
  restart(): Promise<void>;
  /** Stops the server and removes its directory (data, certificates, log). Safe to call twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Access keys as S3 shapes them: 20 upper-case alphanumerics, and a 40-character secret. */
function credentials(): { accessKeyId: string; secretAccessKey: string } {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const id = [...randomBytes(16)].map((b) => alphabet[b % 32]).join('');
  return { accessKeyId: `KANR${id}`, secretAccessKey: randomBytes(30).toString('base64url').slice(0, 40) };
}

/**
 * Starts versitygw (posix backend) on 127.0.0.1 (or `options.address`) and a free port, with TLS from a fresh CA, a
 * region and random root credentials. Builds the pinned versitygw on first use.
 *
 * @example
 * ```ts
 * await using s3 = await startS3Server();
 * await s3.createBucket('backups');
 * await s3.putObject('backups', 'hello.txt', 'hi');
 * console.log(await s3.listObjects('backups')); // [{ key: 'hello.txt', size: 2 }]
 * // pgBackRest: repo1-s3-endpoint=${s3.host}, repo1-storage-port=${s3.port}, repo1-storage-ca-file=${s3.caFile}
 * ```
 */
export async function startS3Server(options: S3ServerOptions = {}): Promise<S3Server> {
  const binary = options.binary ?? (await ensureVersitygw());
  const region = options.region ?? 'us-east-1';
  const address = options.address ?? LOOPBACK;
  const host = address === LOOPBACK ? 'localhost' : address;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const base = options.baseDir ?? tmpdir();
  // The control plane's prefix and owner file: a directory left by a killed test process is swept by the next start.
  await sweepStaleDataDirs(base);
  const dir = await mkdtemp(join(base, `${DATA_DIR_PREFIX}s3-`));
  try {
    await writeOwnerPid(dir);
    // Passable by every user, so that a backup tool running as another OS user reads the CA file
    // (tls/ca.crt); the objects (data, meta) are for the S3 server alone, which runs as this user.
    await chmod(dir, 0o711);
    const dataDir = join(dir, 'data');
    const sidecarDir = join(dir, 'meta');
    const tlsDir = join(dir, 'tls');
    for (const d of [dataDir, sidecarDir]) await mkdir(d, { mode: 0o700 });
    await mkdir(tlsDir);
    await chmod(tlsDir, 0o755);
    const ca = await createCertificateAuthority('kanri-testenv-s3');
    const serving = await ca.issue({
      commonName: 'localhost',
      dnsNames: ['localhost'],
      ipAddresses: [address],
      usage: 'server',
    });
    const caFile = join(tlsDir, 'ca.crt');
    const certFile = join(tlsDir, 'server.crt');
    const keyFile = join(tlsDir, 'server.key');
    await writeFile(caFile, ca.certPem, { mode: 0o644 });
    await writeFile(certFile, serving.certPem, { mode: 0o644 });
    await writeFile(keyFile, serving.keyPem, { mode: 0o600 });
    const port = await freePort(address);
    const endpoint = `https://${host}:${port}`;
    const creds = credentials();
    const command = buildVersitygwCommand({ address, port, dataDir, sidecarDir, certFile, keyFile, region, ...creds });
    const logFile = join(dir, 'versitygw.log');
    const healthAgent = new Agent({ connect: { ca: ca.certPem } });
    const client = new S3Client({ endpoint, region, caPem: ca.certPem, ...creds });

    let child: ManagedProcess | undefined;
    const start = async () => {
      child = startProcess({
        name: 'versitygw',
        command: binary,
        args: command.args,
        env: { ...process.env, ...command.env },
        logFile,
      });
      try {
        await waitHealthy({
          process: child,
          url: `${endpoint}${VERSITYGW_HEALTH_PATH}`,
          dispatcher: healthAgent,
          timeoutMs,
        });
      } catch (error) {
        await child.stop();
        throw error;
      }
    };
    const stop = async () => {
      await child?.stop();
    };
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await stop();
      await Promise.all([client.close(), healthAgent.close()]);
      await rm(dir, { recursive: true, force: true });
    };
    try {
      await start();
    } catch (error) {
      await close();
      throw error;
    }
    return {
      endpoint,
      host,
      port,
      region,
      ...creds,
      caFile,
      caPem: ca.certPem,
      dataDir,
      logFile,
      get pid() {
        return child?.pid ?? -1;
      },
      get running() {
        return child?.running ?? false;
      },
      createBucket: (name) => client.createBucket(name),
      putObject: (bucket, key, body) => client.putObject(bucket, key, body),
      getObject: (bucket, key) => client.getObject(bucket, key),
      listObjects: (bucket, prefix) => client.listObjects(bucket, prefix),
      stop,
      restart: async () => {
        if (closed) throw new Error('startS3Server: restart() after close()');
        await stop();
        await start();
      },
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
