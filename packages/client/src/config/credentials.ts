/**
 * Where request credentials come from, and when to fetch them again: a static token or
 * certificate, a token file that rotates (the in-cluster service account), or an exec plugin
 * whose result is cached until it expires.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { KubeconfigError } from './kubeconfig-error.js';
import type { ExecConfig } from './kubeconfig-file.js';

/** What authenticates a request: a bearer token, a client certificate, or basic auth. */
export interface Credentials {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  /** `user:password`, for basic auth. */
  readonly basic?: string;
}

export interface CredentialSource {
  /** The credentials to use now; cheap when cached. */
  current(): Promise<Credentials>;
  /** Called after a 401: the next `current()` fetches afresh. */
  invalidate(): void;
}

export function staticCredentials(credentials: Credentials): CredentialSource {
  return { current: async () => credentials, invalidate: () => {} };
}

/**
 * A token read from a file and re-read once it is older than `maxAgeMs`, as client-go does for
 * projected service-account tokens, which the kubelet rotates on disk.
 */
export function tokenFileCredentials(path: string, maxAgeMs = 60_000, now = Date.now): CredentialSource {
  let cached: { token: string; readAt: number } | undefined;
  return {
    async current() {
      if (!cached || now() - cached.readAt > maxAgeMs) {
        try {
          cached = { token: (await readFile(path, 'utf8')).trim(), readAt: now() };
        } catch (error) {
          throw new KubeconfigError(`cannot read the bearer token file ${path}`, { cause: error });
        }
      }
      return { token: cached.token };
    },
    invalidate() {
      cached = undefined;
    },
  };
}

interface ExecCredentialStatus {
  readonly token?: string;
  readonly clientCertificateData?: string;
  readonly clientKeyData?: string;
  readonly expirationTimestamp?: string;
}

/** Parses an exec plugin's stdout (an ExecCredential). Pure. */
export function parseExecCredential(stdout: string, command: string): { credentials: Credentials; expiresAt?: number } {
  let parsed: { kind?: string; status?: ExecCredentialStatus };
  try {
    parsed = JSON.parse(stdout);
  } catch (error) {
    throw new KubeconfigError(`exec plugin ${command} printed no valid ExecCredential JSON`, { cause: error });
  }
  const status = parsed.status;
  if (
    parsed.kind !== 'ExecCredential' ||
    !status ||
    !(status.token || (status.clientCertificateData && status.clientKeyData))
  ) {
    throw new KubeconfigError(`exec plugin ${command}: ExecCredential has no status.token or client certificate`);
  }
  const credentials: Credentials = status.token
    ? { token: status.token }
    : { cert: status.clientCertificateData, key: status.clientKeyData };
  const expiresAt = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : undefined;
  return { credentials, expiresAt };
}

/**
 * An exec credential plugin (client.authentication.k8s.io), run on first use and again only when
 * its credential has expired (with a 10 s margin) or the server rejected it.
 */
export function execCredentials(exec: ExecConfig, cwd: string, now = Date.now): CredentialSource {
  let cached: { credentials: Credentials; expiresAt?: number } | undefined;
  let pending: Promise<{ credentials: Credentials; expiresAt?: number }> | undefined;
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1';
  const run = () =>
    new Promise<{ credentials: Credentials; expiresAt?: number }>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion, kind: 'ExecCredential', spec: { interactive: false } }),
      };
      for (const { name, value } of exec.env ?? []) env[name] = value;
      execFile(exec.command, [...(exec.args ?? [])], { cwd, env, timeout: 60_000 }, (error, stdout, stderr) => {
        if (error) {
          const hint = exec.installHint ? `\n${exec.installHint}` : '';
          reject(
            new KubeconfigError(`exec plugin ${exec.command} failed: ${stderr.trim() || error.message}${hint}`, {
              cause: error,
            }),
          );
          return;
        }
        try {
          resolve(parseExecCredential(stdout, exec.command));
        } catch (parseError) {
          reject(parseError);
        }
      });
    });
  return {
    async current() {
      if (cached && (cached.expiresAt === undefined || cached.expiresAt - 10_000 > now())) return cached.credentials;
      // Concurrent callers share one plugin run.
      pending ??= run().finally(() => {
        pending = undefined;
      });
      cached = await pending;
      return cached.credentials;
    },
    invalidate() {
      cached = undefined;
    },
  };
}
