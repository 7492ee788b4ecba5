/**
 * The agent's I/O for failing closed: the TLS files stay when the Secret goes or is not whole,
 * and the configuration taken last from the ConfigMap is kept in the run volume for a restart.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { CONFIG_KEY } from '../contract/index.js';
import type { AgentConfig } from './config.js';
import { InstanceFiles } from './postgres/instance-files.js';
import { writePostgresTlsFiles } from './postgres/postgres-tls-files.js';
import { tlsSecretFixture } from './tls-secret-fixture.js';

const SECRET = { what: 'Secret hippo-postgres-tls', known: true };
describe('the TLS files: a deleted or half-emptied Secret leaves the served ones in place', () => {
  let dir: string;
  let first: Record<string, string>;
  let second: Record<string, string>;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-kept-tls-'));
    const [a, b] = await Promise.all([tlsSecretFixture('hippo'), tlsSecretFixture('hippo')]);
    first = a.data;
    second = b.data;
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('has no files, and says why, before any Secret', async () => {
    const tls = await writePostgresTlsFiles(undefined, join(dir, 'tls'), SECRET);
    assert.deepEqual(tls, {
      files: undefined,
      changed: false,
      secretUnusable: 'Secret hippo-postgres-tls does not exist',
    });
  });

  it('writes a whole Secret (mode 0600), then keeps those files when the Secret is deleted or loses keys', async () => {
    const written = await writePostgresTlsFiles(first, join(dir, 'tls'), SECRET);
    assert.ok(written.files && written.changed && written.secretUnusable === undefined);
    assert.equal((await stat(written.files.serverKey)).mode & 0o777, 0o600);
    const served = await readFile(written.files.serverCert, 'utf8');

    const deleted = await writePostgresTlsFiles(undefined, join(dir, 'tls'), SECRET);
    assert.deepEqual(deleted.files, written.files, 'the files served so far stay in use');
    assert.equal(deleted.secretUnusable, 'Secret hippo-postgres-tls does not exist');
    const { 'tls.crt': _c, 'tls.key': _k, ...rotating } = first;
    const halfEmpty = await writePostgresTlsFiles(rotating, join(dir, 'tls'), SECRET);
    assert.deepEqual(halfEmpty.files, written.files);
    assert.equal(halfEmpty.secretUnusable, 'Secret hippo-postgres-tls lacks tls.crt, tls.key');
    // Half of a new pair with the other half of the old one is not a pair: nothing is written.
    const mixed = await writePostgresTlsFiles(
      { ...first, 'tls.crt': second['tls.crt'] ?? '' },
      join(dir, 'tls'),
      SECRET,
    );
    assert.match(mixed.secretUnusable ?? '', /tls\.crt and tls\.key are not a pair/);
    assert.equal(await readFile(written.files.serverCert, 'utf8'), served, 'not a byte changed on disk');

    const renewed = await writePostgresTlsFiles(second, join(dir, 'tls'), SECRET);
    assert.ok(renewed.changed && renewed.secretUnusable === undefined);
    assert.notEqual(await readFile(written.files.serverCert, 'utf8'), served, 'a whole new Secret is served');
  });
});

describe("the cluster's configuration kept in the run volume", () => {
  let runDir: string;
  const log = pino({ level: 'silent' });
  const config = (): AgentConfig => ({ runDir }) as AgentConfig;

  before(async () => {
    runDir = await mkdtemp(join(tmpdir(), 'kanri-kept-config-'));
  });
  after(() => rm(runDir, { recursive: true, force: true }));

  it('keeps the configuration taken last (mode 0600), for an agent that restarts while the ConfigMap is gone', async () => {
    const before = new InstanceFiles(config(), log);
    assert.equal(before.hasOperatorConfig, false);
    assert.match(
      ((await before.readKeptOperatorConfig()) as { missing: string }).missing,
      /operator-config\.json does not exist/,
    );
    before.setOperatorConfig({ parameters: "work_mem = '4MB'\n", hba: 'host all postgres all reject\n' });
    // The copy is written behind the call: a restarted agent reads it.
    const restarted = new InstanceFiles(config(), log);
    const kept = await waitForKept(restarted);
    assert.deepEqual(kept, { value: { parameters: "work_mem = '4MB'\n", hba: 'host all postgres all reject\n' } });
    assert.equal((await stat(restarted.keptConfigPath)).mode & 0o777, 0o600);
    const text = JSON.parse(await readFile(restarted.keptConfigPath, 'utf8'));
    assert.deepEqual(Object.keys(text), [CONFIG_KEY.parameters, CONFIG_KEY.hba]);
  });
});

async function waitForKept(files: InstanceFiles) {
  for (let i = 0; i < 100; i++) {
    const kept = await files.readKeptOperatorConfig();
    if ('value' in kept) return kept;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return files.readKeptOperatorConfig();
}
