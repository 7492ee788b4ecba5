import assert from 'node:assert/strict';
import { it } from 'node:test';
import { parseVolumeMounts, resolveMountPath } from './mounts.js';

it('maps a path through the longest covering mount, and leaves others alone', () => {
  const mounts = parseVolumeMounts(JSON.stringify({ '/pgdata': '/tmp/p1/data', '/pgdata/wal/': '/tmp/p1/wal' }));
  assert.equal(resolveMountPath('/pgdata', mounts), '/tmp/p1/data');
  assert.equal(resolveMountPath('/pgdata/pgdata', mounts), '/tmp/p1/data/pgdata');
  assert.equal(resolveMountPath('/pgdata/wal/000001', mounts), '/tmp/p1/wal/000001');
  assert.equal(resolveMountPath('/pgdata2/x', mounts), '/pgdata2/x', 'a sibling with a common prefix is not covered');
  assert.equal(resolveMountPath('/run/postgresql', mounts), '/run/postgresql');
});

it('is the identity without KANRI_VOLUME_MOUNTS', () => {
  assert.deepEqual(parseVolumeMounts(undefined), {});
  assert.deepEqual(parseVolumeMounts(''), {});
  assert.equal(resolveMountPath('/pgdata/pgdata', {}), '/pgdata/pgdata');
});

it('rejects malformed mappings with a message naming the variable', () => {
  assert.throws(() => parseVolumeMounts('{'), /KANRI_VOLUME_MOUNTS is not valid JSON/);
  assert.throws(() => parseVolumeMounts('[]'), /must be a JSON object/);
  assert.throws(() => parseVolumeMounts('{"/a":"relative"}'), /absolute path/);
  assert.throws(() => parseVolumeMounts('{"/a":1}'), /absolute path/);
});
