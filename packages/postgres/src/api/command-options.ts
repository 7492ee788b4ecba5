/**
 * The pgBackRest command-line options users may pass to `backup` and `restore`: allow-lists, as
 * the CEL rules that refuse anything else at admission and as pure checks that give the same
 * answers, which the operator and the agent run too (an object admitted before these rules, or
 * written past admission, must not run).
 *
 * Why an allow-list: every other option can send the cluster somewhere else or change what a
 * backup holds (`--repo1-s3-endpoint`, `--repo1-path`, `--config…`, `--cmd-ssh`, `--exclude`,
 * `--no-archive-check`, `--recovery-option=restore_command=…`), and pgBackRest takes any unique
 * prefix of an option's name (`--target-act` is `--target-action`), so no deny-list can be whole.
 * Each option is one item written `--name=value` (a boolean also `--name` or `--no-name`): a bare
 * `--name` that takes a value would make pgBackRest read the next item as its value.
 *
 * The patterns use only what JavaScript's and the API server's (RE2) regular expressions share,
 * and no quote, so one source serves both.
 */

/** Characters no value may hold: a control character would start another line of a file. */
const NO_CONTROL = String.raw`[^\x00-\x1f\x7f]`;
/**
 * What pgBackRest writes into postgresql.auto.conf as `name = 'value'`, without escaping: no
 * control character, quote or backslash, or the value would end early or start another setting.
 */
const RECOVERY_TEXT = String.raw`[^\x00-\x1f\x7f\x22\x27\x5c]`;

/** A recovery target, by restore type: the forms pgBackRest and postgres both read. */
export const RESTORE_TARGETS = {
  // pgBackRest's own form (it picks the backup set from it): "2026-01-02 03:04:05.123+00".
  time: String.raw`[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?([+-][0-9]{2}(:?[0-9]{2})?)?`,
  lsn: '[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}',
  xid: '[0-9]{1,20}',
  // A restore point's name (pg_create_restore_point takes up to 63 bytes).
  name: `${RECOVERY_TEXT}{1,63}`,
} as const;
export type RestoreTargetType = keyof typeof RESTORE_TARGETS;

/** One option users may set, and the shape of its value. */
export interface AllowedOption {
  /** The option's full name, without the dashes. */
  readonly name: string;
  /** The pattern of its value; absent for a boolean (`--name`, `--no-name`, `--name=y|n`). */
  readonly value?: string;
  /** Also written `--name="value"`, as PGO's examples write a time; the agent removes the quotes. */
  readonly quoted?: boolean;
  /** At most once in a list (pgBackRest refuses a second one anyway; this says so at admission). */
  readonly once?: boolean;
}

const processMax: AllowedOption = { name: 'process-max', value: '([1-9]|1[0-6])' };

/**
 * Options of `pgbackrest backup` in `spec.backups.pgbackrest.manual.options`, and why each is safe:
 * `--type` (full, diff or incr) only chooses how much is copied; `--annotation` labels the backup
 * in the repository; `--start-fast` only times the starting checkpoint; `--process-max` (1–16)
 * only sets how many processes copy. None names a repository, a host, a file or a command, or
 * leaves data out of the backup.
 */
export const BACKUP_OPTIONS: readonly AllowedOption[] = [
  { name: 'type', value: '(full|diff|incr)', once: true },
  { name: 'annotation', value: `[A-Za-z0-9_.-]{1,64}=${NO_CONTROL}{0,256}` },
  { name: 'start-fast' },
  processMax,
];

/** A PostgresBackup's `options`: those of BACKUP_OPTIONS but `--type`, which is its field `type`. */
export const POSTGRES_BACKUP_OPTIONS: readonly AllowedOption[] = BACKUP_OPTIONS.filter((o) => o.name !== 'type');

/**
 * Options of `pgbackrest restore` (`restore.options`, and both kinds of `dataSource`), each typed:
 * `--type` is a recovery that ends in a promotion (default, immediate, time, lsn, xid, name; not
 * standby, preserve or none, after which the instance never promotes or keeps the source's
 * settings); `--target` has the form its type reads; `--target-exclusive`; `--target-timeline`
 * current, latest or a number; `--set` a backup label or latest; `--db-include` and `--db-exclude`
 * (PGO's documented partial restore) a database name; `--process-max` 1–16. Refused, among the
 * rest: `--recovery-option`, which writes any setting into postgresql.auto.conf (it overrides the
 * agent's settings and is copied to every replica: `restore_command`, `primary_conninfo`,
 * `archive_cleanup_command`, …), with every recovery setting users need typed above;
 * `--target-action`, `--archive-mode`, `--link-*` and `--tablespace-map*`, which the agent owns or
 * which write outside the data directory.
 */
export const RESTORE_OPTIONS: readonly AllowedOption[] = [
  { name: 'type', value: '(default|immediate|time|lsn|xid|name)', once: true },
  { name: 'target', value: `(${Object.values(RESTORE_TARGETS).join('|')})`, quoted: true, once: true },
  { name: 'target-exclusive' },
  { name: 'target-timeline', value: '(current|latest|[0-9]{1,10}|0x[0-9A-Fa-f]{1,8})', once: true },
  { name: 'set', value: '(latest|[0-9]{8}-[0-9]{6}F(_[0-9]{8}-[0-9]{6}[DI])?)', once: true },
  { name: 'db-include', value: '[A-Za-z0-9_][A-Za-z0-9_$.-]{0,62}' },
  { name: 'db-exclude', value: '[A-Za-z0-9_][A-Za-z0-9_$.-]{0,62}' },
  processMax,
];

/** The pattern one item must match to be one of `allowed`. */
export function allowedOptionsPattern(allowed: readonly AllowedOption[]): string {
  const one = (o: AllowedOption) => {
    if (o.value === undefined) return `--${o.name}(=[yn])?|--no-${o.name}`;
    return o.quoted ? `--${o.name}=(${o.value}|"${o.value}")` : `--${o.name}=${o.value}`;
  };
  return `^(${allowed.map(one).join('|')})$`;
}

/** How `allowed` reads in a message: `--type=…, --start-fast, …`. */
function listed(allowed: readonly AllowedOption[]): string {
  return allowed.map((o) => (o.value === undefined ? `--[no-]${o.name}` : `--${o.name}=…`)).join(', ');
}

const regex = (pattern: string) => new RegExp(pattern, 'u');
/** Restore's lists: `--target` is typed by `--type`. */
const typesTarget = (allowed: readonly AllowedOption[]) => allowed.some((o) => o.name === 'target');

/** A refused option and why, for a message or a status. */
export interface RefusedOption {
  readonly option: string;
  readonly why: string;
}

/** The target a `--type` in `options` reads, by the rule {@link restoreTargetRule} states. */
function targetFits(options: readonly string[], target: string): boolean {
  return (Object.keys(RESTORE_TARGETS) as RestoreTargetType[]).some(
    (type) =>
      options.includes(`--type=${type}`) &&
      regex(`^--target=(${RESTORE_TARGETS[type]}|"${RESTORE_TARGETS[type]}")$`).test(target),
  );
}

/**
 * The first option of `options` that `allowed` refuses, and why; undefined when all are allowed.
 * Gives the same answers as the CEL rules of {@link optionRules}.
 *
 * @example
 * ```ts
 * refusedOption(['--type=time', '--target=2026-01-02 03:04:05+00'], RESTORE_OPTIONS); // undefined
 * refusedOption(['--repo1-s3-endpoint=evil.example'], POSTGRES_BACKUP_OPTIONS)?.option; // '--repo1-s3-endpoint=evil.example'
 * ```
 */
export function refusedOption(
  options: readonly string[] | undefined,
  allowed: readonly AllowedOption[],
): RefusedOption | undefined {
  if (!options) return undefined;
  const pattern = regex(allowedOptionsPattern(allowed));
  const outside = options.find((o) => !pattern.test(o));
  if (outside !== undefined) return { option: outside, why: notAllowed(allowed) };
  for (const o of allowed.filter((a) => a.once && a.value !== undefined)) {
    const twice = options.filter((option) => option.startsWith(`--${o.name}=`));
    if (twice.length > 1) return { option: twice[1] as string, why: `--${o.name} may be given once` };
  }
  if (typesTarget(allowed)) {
    const target = options.find((o) => o.startsWith('--target=') && !targetFits(options, o));
    if (target !== undefined) return { option: target, why: TARGET_WHY };
  }
  return undefined;
}

const notAllowed = (allowed: readonly AllowedOption[]) =>
  `not allowed: options are one per item, from ${listed(allowed)} (an allow-list: other pgBackRest options could send the cluster's data to another repository or host, leave data out of a backup, or run commands)`;

const TARGET_WHY =
  '--target needs --type=time, lsn, xid or name, and a value of that form: a time as 2026-01-02 03:04:05+00, an LSN as 0/3000028, a transaction id, or a restore point name without quotes, backslashes or control characters';

/** `--target` with the form its `--type` reads, in CEL over the option list. */
function restoreTargetRule() {
  const fits = (Object.keys(RESTORE_TARGETS) as RestoreTargetType[])
    .map(
      (type) =>
        `('--type=${type}' in self && o.matches(r'^--target=(${RESTORE_TARGETS[type]}|"${RESTORE_TARGETS[type]}")$'))`,
    )
    .join(' || ');
  return { rule: `self.all(o, !o.startsWith('--target=') || ${fits})`, message: TARGET_WHY };
}

/**
 * The CEL rules of an options list: every item allowed (the message names the first one that is
 * not), options given once at most once, and for restore, `--target` typed by `--type`.
 *
 * @example
 * ```ts
 * z.array(z.string()).meta({ 'x-kubernetes-validations': optionRules(BACKUP_OPTIONS, 'manual backups') });
 * ```
 */
export function optionRules(allowed: readonly AllowedOption[], what: string): object[] {
  const pattern = allowedOptionsPattern(allowed);
  const why = notAllowed(allowed);
  const rules: object[] = [
    {
      rule: `self.all(o, o.matches(r'${pattern}'))`,
      message: `${what}: an option is ${why}`,
      // Names the option: a message that only lists the allowed ones leaves users to find it.
      messageExpression: `${JSON.stringify(`${what}: option `)} + self.filter(o, !o.matches(r'${pattern}'))[0] + ${JSON.stringify(` is ${why}`)}`,
    },
    ...allowed
      .filter((o) => o.once && o.value !== undefined)
      .map((o) => ({
        rule: `self.filter(o, o.startsWith('--${o.name}=')).size() <= 1`,
        message: `${what}: --${o.name} may be given once`,
      })),
  ];
  if (typesTarget(allowed)) rules.push(restoreTargetRule());
  return rules;
}

/**
 * The options as pgBackRest must receive them: PGO writes `--target="2026-01-02 03:04:05+00"` for
 * a shell, and with no shell between, the quotes would reach postgres as part of the time.
 *
 * @example
 * ```ts
 * normalizeOptions(['--type=time', '--target="2026-01-02 03:04:05+00"']); // ['--type=time', '--target=2026-01-02 03:04:05+00']
 * ```
 */
export function normalizeOptions(options: readonly string[]): string[] {
  return options.map((o) => {
    const quoted = /^(--[a-z0-9-]+=)"([^"]*)"$/.exec(o);
    return quoted ? `${quoted[1]}${quoted[2]}` : o;
  });
}
