import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allowedOptionsPattern,
  BACKUP_OPTIONS,
  normalizeOptions,
  optionRules,
  POSTGRES_BACKUP_OPTIONS,
  RESTORE_OPTIONS,
  refusedOption,
} from './command-options.js';

const refused = (options: string[], allowed = RESTORE_OPTIONS) => refusedOption(options, allowed)?.option;

describe('pgBackRest command-line options', () => {
  it("allows PGO's documented backup and restore options", () => {
    assert.equal(refused(['--type=full'], BACKUP_OPTIONS), undefined);
    assert.equal(
      refused(['--type=diff', '--annotation=source=nightly run', '--start-fast'], BACKUP_OPTIONS),
      undefined,
    );
    assert.equal(
      refused(['--process-max=2', '--no-start-fast', '--annotation=a=b'], POSTGRES_BACKUP_OPTIONS),
      undefined,
    );
    for (const options of [
      ['--type=time', '--target=2021-06-09 14:15:11-04'],
      ['--type=time', '--target="2021-06-09 14:15:11-04"'],
      ['--type=time', '--target=2026-12-01 10:00:00.123+00', '--target-exclusive'],
      ['--type=lsn', '--target=0/3000028', '--no-target-exclusive'],
      ['--type=xid', '--target=12345'],
      ['--type=name', '--target=before upgrade'],
      ['--type=immediate', '--set=20260102-030405F'],
      ['--set=20260102-030405F_20260103-030405I', '--target-timeline=latest'],
      ['--type=default', '--target-timeline=0x2', '--db-include=hippo', '--process-max=4'],
      [],
    ])
      assert.equal(refused(options), undefined, options.join(' '));
  });

  it('refuses every option that names a repository, host, file or command, or leaves data out, naming it', () => {
    for (const option of [
      '--repo1-s3-endpoint=evil.example',
      '--repo1-path=/elsewhere',
      '--repo1-host=10.0.0.9',
      '--repo=2',
      '--config=/tmp/x.conf',
      '--config-include-path=/tmp',
      '--cmd-ssh=/bin/sh',
      '--exclude=base',
      '--no-archive-check',
      '--expire-auto',
      '--stanza=other',
      '--pg1-path=/x',
      '--backup-standby',
      // pgBackRest takes any unique prefix of a name: only whole names are allowed.
      '--typ=full',
      '--start-f',
      // A bare option that takes a value would read the next item as its value.
      '--type',
      '--process-max',
      '--type=full --repo1-path=/x',
      '--type=full\n',
      '--process-max=17',
      '--process-max=0',
      '--annotation=a',
      '--annotation=a=b\nc',
      '--start-fast=yes',
    ]) {
      const found = refusedOption(['--start-fast', option], BACKUP_OPTIONS);
      assert.equal(found?.option, option, JSON.stringify(option));
      assert.match(found?.why ?? '', /not allowed: .*an allow-list/);
    }
    // A PostgresBackup's type is its field.
    assert.equal(refused(['--type=diff'], POSTGRES_BACKUP_OPTIONS), '--type=diff');
    assert.equal(refused(['--type=diff'], BACKUP_OPTIONS), undefined);
  });

  it('refuses restore options that write settings, change the archive or write outside PGDATA', () => {
    for (const option of [
      '--recovery-option=restore_command=curl evil',
      '--recovery-option=primary_conninfo=host=evil',
      '--target-action=pause',
      '--target-act=pause',
      '--archive-mode=off',
      '--link-all',
      '--link-map=pg_wal=/tmp',
      '--tablespace-map-all=/tmp',
      '--type=standby',
      '--type=preserve',
      '--type=none',
      '--delta',
      '--force',
      '--set=../../x',
      '--db-include=a b',
      '--target-timeline=next',
    ])
      assert.equal(refused([option]), option);
  });

  it('types --target by --type: its form, and a --type that reads one', () => {
    assert.equal(refused(['--target=2026-01-02 03:04:05+00']), '--target=2026-01-02 03:04:05+00');
    assert.equal(refused(['--type=lsn', '--target=2026-01-02 03:04:05+00']), '--target=2026-01-02 03:04:05+00');
    assert.equal(refused(['--type=time', '--target=yesterday']), '--target=yesterday');
    assert.equal(refused(['--type=time', '--target=2026-01-02']), '--target=2026-01-02');
    assert.equal(refused(['--type=xid', '--target=12a']), '--target=12a');
    assert.equal(refused(['--type=default', '--target=1']), '--target=1');
    // pgBackRest writes the target into postgresql.auto.conf as 'value', without escaping.
    for (const name of ["x'", 'x\\', 'x\nrestore_command = evil', '"x"y"', 'a'.repeat(64)])
      assert.equal(refused(['--type=name', `--target=${name}`]), `--target=${name}`, JSON.stringify(name));
    assert.match(
      refusedOption(['--target=1'], RESTORE_OPTIONS)?.why ?? '',
      /--target needs --type=time, lsn, xid or name/,
    );
  });

  it('refuses a second --type, --target or --set', () => {
    assert.equal(refused(['--type=time', '--type=lsn', '--target=0/1']), '--type=lsn');
    assert.equal(refused(['--type=full', '--type=incr'], BACKUP_OPTIONS), '--type=incr');
    assert.equal(refused(['--set=latest', '--set=20260102-030405F']), '--set=20260102-030405F');
  });

  it('builds CEL rules from the same patterns, naming the refused option in the message', () => {
    const [allowList, ...rest] = optionRules(RESTORE_OPTIONS, 'pgbackrest restore') as {
      rule: string;
      message: string;
      messageExpression?: string;
    }[];
    assert.equal(allowList?.rule, `self.all(o, o.matches(r'${allowedOptionsPattern(RESTORE_OPTIONS)}'))`);
    assert.match(allowList?.messageExpression ?? '', /^"pgbackrest restore: option " \+ self\.filter\(o, !o\.matches/);
    // CEL raw strings end at a quote: the patterns hold none.
    assert.doesNotMatch(allowedOptionsPattern(RESTORE_OPTIONS), /'/);
    assert.deepEqual(
      rest.map((r) => /^self\.(filter|all)\(o, !?o\.startsWith\('(--[a-z-]+=)'\)/.exec(r.rule)?.slice(1)),
      [
        ['filter', '--type='],
        ['filter', '--target='],
        ['filter', '--target-timeline='],
        ['filter', '--set='],
        ['all', '--target='],
      ],
    );
    assert.equal((optionRules(POSTGRES_BACKUP_OPTIONS, 'x') as object[]).length, 1);
  });

  it("removes the quotes PGO's examples put around a value, and nothing else", () => {
    assert.deepEqual(normalizeOptions(['--type=time', '--target="2021-06-09 14:15:11-04"', '--annotation=a="b"']), [
      '--type=time',
      '--target=2021-06-09 14:15:11-04',
      '--annotation=a="b"',
    ]);
  });
});
