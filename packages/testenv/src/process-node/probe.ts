/**
 * Container probes (httpGet, tcpSocket, exec) and the loop that applies a probe's timing and
 * thresholds, as the kubelet's prober does.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Container, Probe } from 'kubernetes-types/core/v1.js';

export interface ProbeResult {
  readonly ok: boolean;
  readonly message?: string;
}

export interface ProbeTarget {
  readonly podIP: string;
  readonly container: Container;
  /** Runs an exec probe's command; resolves to its exit code (or a failure message). */
  readonly exec: (command: readonly string[], timeoutMs: number) => Promise<ProbeResult>;
}

/** A probe port (number or the name of a container port) as a number. */
export function probePort(container: Container, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

function httpProbe(probe: NonNullable<Probe['httpGet']>, target: ProbeTarget, timeoutMs: number) {
  return new Promise<ProbeResult>((resolve) => {
    const port = probePort(target.container, probe.port);
    if (port === undefined) {
      resolve({ ok: false, message: `unknown port ${probe.port}` });
      return;
    }
    const https = probe.scheme === 'HTTPS';
    const headers: Record<string, string> = { 'user-agent': 'kube-probe/kanri-process-node', accept: '*/*' };
    for (const header of probe.httpHeaders ?? []) headers[header.name.toLowerCase()] = header.value;
    const req = (https ? httpsRequest : httpRequest)(
      {
        host: probe.host || target.podIP,
        port,
        path: probe.path || '/',
        method: 'GET',
        headers,
        timeout: timeoutMs,
        // Like the kubelet, an HTTPS probe does not verify the certificate.
        ...(https ? { rejectUnauthorized: false } : {}),
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(
          status >= 200 && status < 400
            ? { ok: true }
            : { ok: false, message: `HTTP probe failed with statuscode: ${status}` },
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', (error) => resolve({ ok: false, message: `Get ${probe.path ?? '/'}: ${error.message}` }));
    req.end();
  });
}

function tcpProbe(probe: NonNullable<Probe['tcpSocket']>, target: ProbeTarget, timeoutMs: number) {
  return new Promise<ProbeResult>((resolve) => {
    const port = probePort(target.container, probe.port);
    if (port === undefined) {
      resolve({ ok: false, message: `unknown port ${probe.port}` });
      return;
    }
    const socket = connect({ host: probe.host || target.podIP, port });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    socket.once('connect', () => {
      socket.destroy();
      resolve({ ok: true });
    });
    socket.once('error', (error) => resolve({ ok: false, message: error.message }));
  });
}

/** Runs a probe once. */
export async function runProbe(probe: Probe, target: ProbeTarget): Promise<ProbeResult> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  if (probe.httpGet) return httpProbe(probe.httpGet, target, timeoutMs);
  if (probe.tcpSocket) return tcpProbe(probe.tcpSocket, target, timeoutMs);
  if (probe.exec?.command) return target.exec(probe.exec.command, timeoutMs);
  return { ok: false, message: 'this process node supports httpGet, tcpSocket and exec probes only' };
}

export type ProbeKind = 'readiness' | 'liveness' | 'startup';

/**
 * Runs `probe` on its schedule until `signal` aborts, reporting each change of outcome: `onChange(true)`
 * after `successThreshold` successes in a row, `onChange(false)` after `failureThreshold` failures.
 * The initial state is "not yet succeeded" (readiness false).
 */
export async function runProber(
  probe: Probe,
  kind: ProbeKind,
  target: ProbeTarget,
  onChange: (ok: boolean, result: ProbeResult) => void,
  signal: AbortSignal,
): Promise<void> {
  const period = (probe.periodSeconds ?? 10) * 1000;
  // Liveness and startup probes must have successThreshold 1 (API validation).
  const successThreshold = kind === 'readiness' ? (probe.successThreshold ?? 1) : 1;
  const failureThreshold = probe.failureThreshold ?? 3;
  let successes = 0;
  let failures = 0;
  let state: boolean | undefined;
  const wait = (ms: number) =>
    sleep(ms, undefined, { signal }).then(
      () => true,
      () => false,
    );
  if (!(await wait((probe.initialDelaySeconds ?? 0) * 1000))) return;
  while (!signal.aborted) {
    const result = await runProbe(probe, target);
    if (signal.aborted) return;
    if (result.ok) {
      successes++;
      failures = 0;
      if (successes >= successThreshold && state !== true) {
        state = true;
        onChange(true, result);
      }
    } else {
      failures++;
      successes = 0;
      if (failures >= failureThreshold && state !== false) {
        state = false;
        onChange(false, result);
        // A failed liveness or startup probe ends the container; the caller aborts us.
      }
    }
    if (!(await wait(period))) return;
  }
}
