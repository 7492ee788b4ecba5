/**
 * versitygw as testenv runs it: an S3 server over a plain directory (posix backend), TLS, on one
 * local address (loopback, or the host's address on the real nodes' bridge).
 */
import { isAbsolute, relative } from 'node:path';
import { LOOPBACK } from '../free-port.js';

export interface VersitygwConfig {
  /** The IPv4 address to listen on; default 127.0.0.1. */
  readonly address?: string;
  readonly port: number;
  /** Where buckets live, one directory each, objects as plain files. */
  readonly dataDir: string;
  /** Where object metadata lives: outside `dataDir`, so that directory holds objects only. */
  readonly sidecarDir: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The path `GET` answers 200 on once the server serves requests. */
export const VERSITYGW_HEALTH_PATH = '/health';

function inside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The command line and environment of one versitygw. The root credentials travel in the
 * environment, not argv, where every local user could read them in /proc.
 */
export function buildVersitygwCommand(config: VersitygwConfig): { args: string[]; env: Record<string, string> } {
  for (const [name, path] of Object.entries({
    dataDir: config.dataDir,
    sidecarDir: config.sidecarDir,
    certFile: config.certFile,
    keyFile: config.keyFile,
  })) {
    if (!isAbsolute(path)) throw new Error(`versitygw: ${name} must be an absolute path, got ${path}`);
  }
  // versitygw refuses a sidecar inside its root; the reverse would list metadata files as objects.
  if (inside(config.dataDir, config.sidecarDir) || inside(config.sidecarDir, config.dataDir)) {
    throw new Error(`versitygw: the data dir ${config.dataDir} and sidecar dir ${config.sidecarDir} must not nest`);
  }
  return {
    args: [
      `--port=${config.address ?? LOOPBACK}:${config.port}`,
      `--cert=${config.certFile}`,
      `--key=${config.keyFile}`,
      `--region=${config.region}`,
      `--health=${VERSITYGW_HEALTH_PATH}`,
      // One log line per request would flood the log of a backup test.
      '--quiet',
      'posix',
      `--sidecar=${config.sidecarDir}`,
      config.dataDir,
    ],
    env: { ROOT_ACCESS_KEY_ID: config.accessKeyId, ROOT_SECRET_ACCESS_KEY: config.secretAccessKey },
  };
}
