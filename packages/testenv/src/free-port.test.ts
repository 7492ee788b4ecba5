import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { ephemeralPortStart, freePorts, isPortFree, LOOPBACK } from './free-port.js';

describe('freePort', () => {
  it('takes ports below the ephemeral range, which outgoing connections never get as their source port', async () => {
    const ports = await freePorts(50);
    assert.equal(new Set(ports).size, 50);
    for (const port of ports) {
      assert.ok(port >= 10_000 && port < ephemeralPortStart(), `${port} is below ${ephemeralPortStart()}`);
    }
  });

  it('gives ports that can be bound, and sees one that is taken', async () => {
    const [port] = (await freePorts(1)) as [number];
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ host: LOOPBACK, port, exclusive: true }, resolve));
    assert.equal(await isPortFree(port), false);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    assert.equal(await isPortFree(port), true);
  });
});
