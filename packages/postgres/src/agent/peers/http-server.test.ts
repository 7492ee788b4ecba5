import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { startHttpServer } from './http-server.js';

it('answers a flood of /status with 429 beyond the rate, reads one live status at a time, and keeps the probes answering', async () => {
  let reading = 0;
  let mostAtOnce = 0;
  let reads = 0;
  const source = {
    health: () => null,
    readiness: () => null,
    async liveStatus() {
      reads++;
      reading++;
      mostAtOnce = Math.max(mostAtOnce, reading);
      await sleep(20); // a postgres query
      reading--;
      return { name: 'db-i-0' };
    },
  };
  const server = await startHttpServer('127.0.0.1', 0, source, new Registry());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const started = performance.now();
    const codes = await Promise.all(Array.from({ length: 200 }, () => fetch(`${base}/status`).then((r) => r.status)));
    const seconds = (performance.now() - started) / 1000;
    const ok = codes.filter((c) => c === 200).length;
    const limited = codes.filter((c) => c === 429).length;
    assert.equal(ok + limited, 200);
    // The burst, plus what 20/s refills while the flood lasts (longer on a loaded machine).
    const bound = 40 + Math.ceil(20 * seconds);
    assert.ok(ok >= 40 && ok <= bound, `the burst (40) and the refill of ${seconds.toFixed(2)} s got through: ${ok}`);
    assert.equal(mostAtOnce, 1, 'one live status read at a time');
    assert.ok(reads < ok, `concurrent requests shared reads: ${reads} reads for ${ok} answers`);
    assert.equal((await fetch(`${base}/healthz`)).status, 200, 'the probes are not limited');
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

it('refuses POST /failsafe over plain HTTP: an agent not yet certified vouches for nobody', async () => {
  const asked: string[] = [];
  const source = {
    health: () => null,
    readiness: () => null,
    liveStatus: async () => ({ name: 'db-i-2' }),
    vouch(request: { leader: string }) {
      asked.push(request.leader);
      return { name: 'db-i-2', accepted: true };
    },
    // No peer certificate yet: the peer API is still served here.
    peerApiOverPlainHttp: () => true,
  };
  const server = await startHttpServer('127.0.0.1', 0, source, new Registry());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const response = await fetch(`${base}/failsafe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: 'db-i-0' }),
    });
    assert.equal(response.status, 403);
    assert.match(await response.text(), /only to a certified peer over mutual TLS/);
    assert.deepEqual(asked, [], 'the agent was never asked');
    assert.equal((await fetch(`${base}/status`)).status, 200, 'the read-only status stays until certified');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
