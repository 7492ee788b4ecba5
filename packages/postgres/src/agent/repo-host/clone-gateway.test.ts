import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CertificateAuthority, certifyPublicKey, createCertificateAuthority } from '@kanri/runtime';
import { pino } from 'pino';
import { CLONE_COMMON_NAME, type CloneGrant, cloneToken } from '../../contract/index.js';
import { PgBackRestKey } from '../backups/pgbackrest-key.js';
import { byteRange, CloneGateway, listObjects, objectPath } from './clone-gateway.js';

describe('the clone port (issue 37, finding 4: a clone reads its source’s repo, never writes it)', () => {
  let dir: string;
  let repo: string;
  let ca: CertificateAuthority;
  let gateway: CloneGateway;
  let hostKey: PgBackRestKey;
  let cloneKey: PgBackRestKey;
  let port: number;
  const grants = new Map<string, CloneGrant>();
  const grantFor = async (
    key: PgBackRestKey,
    pod: string,
    options: { ca?: CertificateAuthority; days?: number } = {},
  ) =>
    certifyPublicKey({
      publicKeyPem: key.publicKeyPem,
      commonName: CLONE_COMMON_NAME,
      dnsNames: [pod],
      ca: options.ca ?? ca,
      validityDays: options.days ?? 1 / 24,
    });
  const tokenOf = (key: PgBackRestKey, pod: string) =>
    cloneToken(key.agree(new X509Certificate(hostCert).publicKey), pod);
  let hostCert: string;

  /** Status and body of one request to the port. */
  const call = (path: string, options: { method?: string; token?: string; range?: string } = {}) =>
    new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path,
          method: options.method ?? 'GET',
          ca: ca.caCertPem,
          headers: {
            ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
            ...(options.range ? { range: options.range } : {}),
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        },
      );
      req.once('error', reject);
      req.end();
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-clone-port-'));
    repo = join(dir, 'repo1');
    await mkdir(join(repo, 'backup', 'db', '20260101-000000F'), { recursive: true });
    await mkdir(join(repo, 'archive', 'db', '15-1', '0000000100000000'), { recursive: true });
    await writeFile(join(repo, 'backup', 'db', 'backup.info'), 'info');
    await writeFile(join(repo, 'backup', 'db', '20260101-000000F', 'backup.manifest'), '0123456789');
    await writeFile(join(repo, 'archive', 'db', '15-1', '0000000100000000', '000000010000000000000001-ab.gz'), 'w');
    await symlink(join(repo, 'backup', 'db', '20260101-000000F'), join(repo, 'backup', 'db', 'latest'));
    await writeFile(join(dir, 'secret'), 'outside the repo');
    await symlink(join(dir, 'secret'), join(repo, 'backup', 'db', 'escape'));
    ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
    hostKey = PgBackRestKey.kept(join(dir, 'host'));
    cloneKey = PgBackRestKey.kept(join(dir, 'clone'));
    hostCert = await certifyPublicKey({
      publicKeyPem: hostKey.publicKeyPem,
      ipAddresses: ['127.0.0.1'],
      commonName: 'pgbackrest@hippo',
      clientAuth: true,
      ca,
    });
    grants.set('copy-i-0', { cluster: 'copy', certificate: await grantFor(cloneKey, 'copy-i-0') });
    gateway = new CloneGateway(
      { repoPaths: () => ({ repo1: repo }), grants: () => grants, ca: () => ca.caCertPem },
      hostKey,
      pino({ enabled: false }),
    );
    port = 18433 + (process.pid % 1000);
    await gateway.ensure('127.0.0.1', port, { cert: hostCert, key: await readFile(hostKey.keyFile, 'utf8') });
  });
  after(async () => {
    await gateway?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('lists, describes and serves objects (a byte range too) to a granted clone Pod, as GCS would', async () => {
    const token = tokenOf(cloneKey, 'copy-i-0');
    const list = await call('/storage/v1/b/repo1/o?delimiter=%2F&prefix=backup%2Fdb%2F&fields=items', { token });
    assert.equal(list.status, 200, list.body);
    const listed = JSON.parse(list.body) as { prefixes: string[]; items: { name: string; size: string }[] };
    assert.deepEqual(listed.prefixes, ['backup/db/20260101-000000F/']);
    assert.deepEqual(
      listed.items.map((i) => [i.name, i.size]),
      [['backup/db/backup.info', '4']],
      'links are no objects',
    );
    const wal = await call(
      '/storage/v1/b/repo1/o?prefix=archive%2Fdb%2F15-1%2F0000000100000000%2F000000010000000000000001',
      {
        token,
      },
    );
    assert.deepEqual(
      (JSON.parse(wal.body) as { items: { name: string }[] }).items.map((i) => i.name),
      ['archive/db/15-1/0000000100000000/000000010000000000000001-ab.gz'],
    );
    const name = encodeURIComponent('backup/db/20260101-000000F/backup.manifest');
    const info = await call(`/storage/v1/b/repo1/o/${name}?fields=size,updated`, { token });
    assert.equal(JSON.parse(info.body).size, '10');
    assert.match(JSON.parse(info.body).updated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal((await call(`/storage/v1/b/repo1/o/${name}?alt=media`, { token })).body, '0123456789');
    const part = await call(`/storage/v1/b/repo1/o/${name}?alt=media`, { token, range: 'bytes=2-4' });
    assert.equal(part.status, 206);
    assert.equal(part.body, '234');
    assert.equal(
      (await call(`/storage/v1/b/repo1/o/${encodeURIComponent('backup/db/nothing')}`, { token })).status,
      404,
    );
  });

  it('refuses every write, granted or not: no upload, no delete', async () => {
    const token = tokenOf(cloneKey, 'copy-i-0');
    const name = encodeURIComponent('backup/db/backup.info');
    for (const [method, path] of [
      ['DELETE', `/storage/v1/b/repo1/o/${name}`],
      ['POST', `/upload/storage/v1/b/repo1/o?uploadType=media&name=${name}`],
      ['PUT', `/storage/v1/b/repo1/o/${name}`],
      ['PATCH', `/storage/v1/b/repo1/o/${name}`],
    ] as const) {
      const answer = await call(path, { method, token });
      assert.equal(answer.status, 403, `${method} ${path}`);
      assert.match(answer.body, /read-only/);
    }
  });

  it('stays inside the repo: no .., no link out of it', async () => {
    const token = tokenOf(cloneKey, 'copy-i-0');
    for (const name of ['../secret', 'backup/db/escape', 'backup/./db/backup.info', '/etc/passwd'])
      assert.equal(
        (await call(`/storage/v1/b/repo1/o/${encodeURIComponent(name)}?alt=media`, { token })).status,
        404,
        name,
      );
    assert.equal(objectPath(repo, 'a/../b'), undefined);
    assert.equal((await call('/storage/v1/b/other/o', { token })).status, 404, 'only volume repos');
  });

  it('refuses without a grant: no token, another Pod’s token, another CA’s or an ended grant, a removed one', async () => {
    const other = PgBackRestKey.kept(join(dir, 'other'));
    const path = '/storage/v1/b/repo1/o?prefix=backup%2F';
    assert.equal((await call(path)).status, 403);
    assert.equal((await call(path, { token: tokenOf(other, 'copy-i-0') })).status, 403, 'a key never granted');
    assert.equal((await call(path, { token: tokenOf(cloneKey, 'copy-i-1') })).status, 403, 'the grant names its Pod');
    const otherCa = await createCertificateAuthority();
    grants.set('x-i-0', { cluster: 'x', certificate: await grantFor(other, 'x-i-0', { ca: otherCa }) });
    assert.equal((await call(path, { token: tokenOf(other, 'x-i-0') })).status, 403, 'not the cluster’s CA');
    grants.set('x-i-0', { cluster: 'x', certificate: await grantFor(other, 'x-i-0', { days: -1 / 48 }) });
    assert.equal((await call(path, { token: tokenOf(other, 'x-i-0') })).status, 403, 'ended');
    grants.set('x-i-0', { cluster: 'x', certificate: await grantFor(other, 'x-i-0') });
    assert.equal((await call(path, { token: tokenOf(other, 'x-i-0') })).status, 200, 'the control');
    grants.delete('x-i-0');
    assert.equal((await call(path, { token: tokenOf(other, 'x-i-0') })).status, 403, 'removed: refused at once');
  });

  it('reads byte ranges as pgBackRest asks them', () => {
    assert.deepEqual(byteRange('bytes=0-', 10), { start: 0, end: 9 });
    assert.deepEqual(byteRange('bytes=5-100', 10), { start: 5, end: 9 });
    assert.equal(byteRange('bytes=11-', 10), 'invalid');
    assert.equal(byteRange(undefined, 10), undefined);
  });

  it('lists nothing outside the repo’s root', async () => {
    assert.deepEqual(await listObjects(repo, '../', '/'), { prefixes: [], items: [] });
  });
});
