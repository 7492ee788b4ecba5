/**
 * The repo host's clone port (contract/clone-gateway.ts): HTTPS on the Pod IP, with the Pod's own
 * pgBackRest certificate, serving the volume repos to clones as the few reads of the Google Cloud
 * Storage JSON API that pgBackRest's `gcs` repo type makes: an object's metadata, a listing of a
 * prefix, an object's contents (whole or a byte range). Nothing that writes exists here, so a clone
 * can restore and fetch WAL but never push, expire or delete, whatever it sends.
 *
 * Guarantees: every request is authorized afresh against the grants on the repo host's Pod (a
 * removed or expired grant is refused at once); every path stays inside the repo's volume (no
 * `..`, no symbolic link followed out of it).
 */
import { createReadStream } from 'node:fs';
import { lstat, readdir, realpath } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { join, sep } from 'node:path';
import type { CloneGrant } from '../../contract/index.js';
import type { PgBackRestKey } from '../backups/pgbackrest-key.js';
import type { Logger } from '../log/logger.js';
import { authorizeClone } from './clone-grants.js';

/** What the gateway serves from, read at each request (the spec and the grants change). */
export interface CloneGatewaySource {
  /** Each volume repo's path on this host, by repo name (the bucket's name). */
  repoPaths(): Readonly<Record<string, string>>;
  /** The grants on this Pod, by clone Pod. */
  grants(): ReadonlyMap<string, CloneGrant>;
  /** The CA that issues this cluster's pgBackRest certificates, PEM (grants must be its). */
  ca(): string | undefined;
}

interface ObjectInfo {
  readonly name: string;
  readonly size: string;
  readonly updated: string;
}

const LIST = /^\/storage\/v1\/b\/([^/]+)\/o$/;
const OBJECT = /^\/storage\/v1\/b\/([^/]+)\/o\/(.+)$/;

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const refuse = (res: ServerResponse, code: number, message: string) => send(res, code, { error: { code, message } });

/** `name` as a path under `root`, or undefined when it is no plain relative path. */
export function objectPath(root: string, name: string): string | undefined {
  const parts = name.split('/');
  if (name.includes('\0') || parts.some((p) => p === '' || p === '.' || p === '..')) return undefined;
  return join(root, ...parts);
}

/** Whether `path`, links resolved, is `root` or inside it. */
async function inside(root: string, path: string): Promise<boolean> {
  try {
    const [r, p] = await Promise.all([realpath(root), realpath(path)]);
    return p === r || p.startsWith(`${r}${sep}`);
  } catch {
    return false;
  }
}

/**
 * The objects and (with delimiter `/`) the sub-prefixes under `prefix`, as GCS lists them, sorted;
 * links are left out (the posix repo's `latest` is no object).
 */
export async function listObjects(
  root: string,
  prefix: string,
  delimiter: string | undefined,
): Promise<{ prefixes: string[]; items: ObjectInfo[] }> {
  const prefixes: string[] = [];
  const items: ObjectInfo[] = [];
  const slash = prefix.lastIndexOf('/');
  const start = slash >= 0 ? prefix.slice(0, slash) : '';
  const walk = async (rel: string): Promise<void> => {
    const dir = rel === '' ? root : objectPath(root, rel);
    if (!dir || !(await inside(root, dir))) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const name = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (!name.startsWith(prefix) && !`${name}/`.startsWith(prefix)) continue;
      if (entry.isDirectory()) {
        if (delimiter === '/') prefixes.push(`${name}/`);
        else await walk(name);
      } else if (entry.isFile()) {
        const info = await lstat(join(dir, entry.name)).catch(() => undefined);
        if (info?.isFile()) items.push({ name, size: String(info.size), updated: info.mtime.toISOString() });
      }
    }
  };
  await walk(start);
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return { prefixes: prefixes.sort(byName), items: items.sort((a, b) => byName(a.name, b.name)) };
}

/** `bytes=a-b` or `bytes=a-` of a file of `size` bytes: the inclusive range, or undefined for the whole. */
export function byteRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'invalid' | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d+)-(\d*)$/.exec(header.trim());
  if (!match) return 'invalid';
  const start = Number(match[1]);
  const end = match[2] ? Math.min(Number(match[2]), size - 1) : size - 1;
  return start > end ? 'invalid' : { start, end };
}

export class CloneGateway {
  readonly #source: CloneGatewaySource;
  readonly #key: PgBackRestKey;
  readonly #log: Logger;
  #server: Server | undefined;
  #material: string | undefined;

  constructor(source: CloneGatewaySource, key: PgBackRestKey, log: Logger) {
    this.#source = source;
    this.#key = key;
    this.#log = log;
  }

  /** Serves on `address:port` with this certificate and key (PEM), or takes a renewed one. */
  async ensure(address: string, port: number, tls: { cert: string; key: string }): Promise<void> {
    const material = `${tls.cert}\0${tls.key}`;
    if (this.#server && this.#material === material) return;
    this.#material = material;
    if (this.#server) {
      this.#server.setSecureContext({ cert: tls.cert, key: tls.key });
      return;
    }
    const server = createServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, (req, res) => {
      this.#serve(req, res).catch((error: unknown) => {
        this.#log.warn({ err: error }, 'clone port: a request failed');
        if (!res.headersSent) refuse(res, 500, 'internal error');
        else res.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, address, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.#log.warn({ err: error }, 'clone port error'));
    this.#server = server;
    this.#log.info({ address, port }, 'clone port serving the volume repos read-only');
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#material = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return refuse(res, 403, 'the clone port is read-only: it never writes, expires or deletes');
    const granted = authorizeClone(req.headers.authorization, this.#source.grants(), this.#source.ca(), this.#key);
    if ('refused' in granted) {
      this.#log.info({ refused: granted.refused }, 'clone port: request refused');
      return refuse(res, 403, `not granted: ${granted.refused}`);
    }
    const url = new URL(req.url ?? '/', 'https://clone-port');
    const list = LIST.exec(url.pathname);
    const object = OBJECT.exec(url.pathname);
    const bucket = decodeURIComponent((list ?? object)?.[1] ?? '');
    const root = this.#source.repoPaths()[bucket];
    if (!root) return refuse(res, 404, `no volume repo ${bucket}`);
    if (list) {
      const { prefixes, items } = await listObjects(
        root,
        url.searchParams.get('prefix') ?? '',
        url.searchParams.get('delimiter') ?? undefined,
      );
      return send(res, 200, { kind: 'storage#objects', prefixes, items });
    }
    const name = decodeURIComponent(object?.[2] ?? '');
    const path = objectPath(root, name);
    const info = path && (await inside(root, path)) ? await lstat(path).catch(() => undefined) : undefined;
    if (!path || !info?.isFile()) return refuse(res, 404, 'Not Found');
    if (url.searchParams.get('alt') !== 'media')
      return send(res, 200, { name, size: String(info.size), updated: info.mtime.toISOString() });
    const range = byteRange(req.headers.range, info.size);
    if (range === 'invalid') return refuse(res, 416, 'Range Not Satisfiable');
    const headers = {
      'content-type': 'application/octet-stream',
      'content-length': range ? range.end - range.start + 1 : info.size,
      ...(range ? { 'content-range': `bytes ${range.start}-${range.end}/${info.size}` } : {}),
    };
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === 'HEAD' || info.size === 0) return void res.end();
    const stream = createReadStream(path, range ?? {});
    stream.on('error', () => res.destroy());
    stream.pipe(res);
  }
}
