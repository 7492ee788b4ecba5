import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { pino } from 'pino';
import { Redactor } from '../log/redactor.js';
import { failureReason, PgBackRest } from './pgbackrest.js';

it('reports the error pgBackRest prints on stdout while it loads its options, redacted', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kanri-pgbackrest-unit-'));
  try {
    // What pgBackRest 2.55 does with a missing include path: the error on stdout, exit 73.
    const bin = join(dir, 'fake-pgbackrest');
    await writeFile(
      bin,
      '#!/bin/sh\necho "P00  ERROR: [073]: unable to list file info for missing path \'/s3cr3t-path\'"\nexit 73\n',
    );
    await chmod(bin, 0o755);
    const redactor = new Redactor();
    redactor.add('s3cr3t-path');
    const config = {
      namespace: 'n',
      cluster: 'c',
      runDir: dir,
      dataDir: dir,
      pgdata: dir,
      socketDir: dir,
      pgbackrestBin: bin,
    };
    const result = await new PgBackRest(config, pino({ enabled: false }), redactor).run(['info']);
    assert.equal(result.code, 73);
    const reason = failureReason(result, 'pgbackrest info');
    assert.match(reason, /^pgbackrest info failed \(exit 73\): ERROR: \[073\]: unable to list file info/);
    assert.doesNotMatch(reason, /s3cr3t/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
