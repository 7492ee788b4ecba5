import assert from 'node:assert/strict';
import { access, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { isPortFree } from '../src/free-port.js';
import {
  isProcessAlive,
  S3Client,
  S3RequestError,
  type S3Server,
  startControlPlane,
  startS3Server,
} from '../src/index.js';

describe('startS3Server', { timeout: 180_000 }, () => {
  let s3: S3Server;
  before(async () => {
    s3 = await startS3Server({ region: 'eu-west-3' });
  });
  after(async () => {
    await s3?.close();
  });

  it('serves S3 over TLS on loopback: a bucket, an object put and listed, stored as a plain file', async () => {
    assert.equal(s3.endpoint, `https://localhost:${s3.port}`);
    assert.equal(s3.region, 'eu-west-3');
    assert.match(s3.accessKeyId, /^[A-Z0-9]{20}$/);
    assert.equal(s3.secretAccessKey.length, 40);
    await s3.createBucket('backups');
    await s3.putObject('backups', 'repo/archive/000000010000000000000001', 'wal bytes');
    await s3.putObject('backups', 'other/file name+x', Buffer.from('xy'));
    assert.deepEqual(await s3.listObjects('backups', 'repo/'), [
      { key: 'repo/archive/000000010000000000000001', size: 9 },
    ]);
    assert.deepEqual(
      (await s3.listObjects('backups')).map((o) => o.key),
      ['other/file name+x', 'repo/archive/000000010000000000000001'],
    );
    assert.equal((await s3.getObject('backups', 'other/file name+x')).toString(), 'xy');
    const onDisk = join(s3.dataDir, 'backups', 'repo', 'archive', '000000010000000000000001');
    assert.equal(await readFile(onDisk, 'utf8'), 'wal bytes', 'objects are plain files a test can damage');
  });

  it('refuses a wrong secret and an unknown bucket with S3 error codes', async () => {
    const wrong = new S3Client({ ...s3, secretAccessKey: `${s3.secretAccessKey.slice(1)}x` });
    try {
      await assert.rejects(
        wrong.listObjects('backups'),
        (error: unknown) => error instanceof S3RequestError && error.status === 403,
      );
    } finally {
      await wrong.close();
    }
    await assert.rejects(
      s3.listObjects('no-such-bucket'),
      (error: unknown) => error instanceof S3RequestError && error.code === 'NoSuchBucket',
    );
  });

  it('presents a certificate only its CA vouches for, and leaves the CA readable by every user', async () => {
    await assert.rejects(
      request(`${s3.endpoint}/`, { headersTimeout: 10_000 }),
      (error: unknown) =>
        error instanceof Error &&
        'code' in error &&
        /SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(String(error.code)),
    );
    assert.equal(await readFile(s3.caFile, 'utf8'), s3.caPem);
    assert.equal((await stat(s3.caFile)).mode & 0o004, 0o004);
  });

  it('keeps port, data and credentials across stop() and restart(), and stop() leaves no process', async () => {
    const firstPid = s3.pid;
    assert.ok(isProcessAlive(firstPid));
    await s3.stop();
    assert.equal(s3.running, false);
    assert.equal(isProcessAlive(firstPid), false, `versitygw ${firstPid} is gone`);
    assert.ok(await isPortFree(s3.port), 'nothing listens while stopped');
    await assert.rejects(s3.listObjects('backups'), /ECONNREFUSED|connect/);
    await s3.stop(); // twice is fine
    await s3.restart();
    assert.notEqual(s3.pid, firstPid);
    assert.ok(isProcessAlive(s3.pid));
    assert.equal((await s3.getObject('backups', 'repo/archive/000000010000000000000001')).toString(), 'wal bytes');
  });

  it('close() ends the server by PID and removes its directory', async () => {
    const server = await startS3Server();
    const pid = server.pid;
    await server.createBucket('scratch');
    await server.close();
    assert.equal(isProcessAlive(pid), false);
    await assert.rejects(access(server.dataDir), /ENOENT/);
    await assert.rejects(server.restart(), /after close/);
  });

  it('listens on another local address when asked, and its certificate names that address', async () => {
    // 127.0.0.0/8 is all local, so 127.0.0.3 stands for a bridge address without creating one.
    const other = await startS3Server({ address: '127.0.0.3' });
    try {
      assert.equal(other.host, '127.0.0.3');
      assert.equal(other.endpoint, `https://127.0.0.3:${other.port}`);
      await other.createBucket('elsewhere'); // TLS verified against the CA, for IP:127.0.0.3
      assert.deepEqual(await other.listObjects('elsewhere'), []);
      await assert.rejects(
        request(`https://127.0.0.1:${other.port}/`, { dispatcher: new Agent({ connect: { ca: other.caPem } }) }),
        /ECONNREFUSED/,
        'nothing listens on 127.0.0.1',
      );
    } finally {
      await other.close();
    }
  });

  it('comes with a control plane when asked (cp.s3), and stops with it', async () => {
    const cp = await startControlPlane({ s3: { region: 'us-west-2' } });
    let pid = -1;
    let dataDir = '';
    try {
      assert.ok(cp.s3, 'cp.s3 is set');
      ({ pid, dataDir } = cp.s3);
      assert.equal(cp.s3.region, 'us-west-2');
      await cp.s3.createBucket('with-plane');
      assert.deepEqual(await cp.s3.listObjects('with-plane'), []);
    } finally {
      await cp.stop();
    }
    assert.equal(isProcessAlive(pid), false, 'versitygw ended with the control plane');
    await assert.rejects(access(dataDir), /ENOENT/);
  });
});
