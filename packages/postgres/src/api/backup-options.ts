/**
 * The pgBackRest options users may not set, as constants, as the CEL rules that refuse them at
 * admission and as pure checks that give the same answers (for the operator and for tests).
 */

/** Repository names pgBackRest numbers: `repo1` … `repo4`. */
export const REPO_NAMES = ['repo1', 'repo2', 'repo3', 'repo4'] as const;
export type RepoName = (typeof REPO_NAMES)[number];
export const REPO_NAME_PATTERN = /^repo[1-4]$/;

/** `global` options the operator sets itself: the stanza, where postgres is, pgBackRest's own paths. */
export const OPERATOR_OWNED_GLOBAL_OPTIONS = [
  'stanza',
  'pg1-path',
  'pg1-port',
  'pg1-socket-path',
  'log-path',
  'lock-path',
  'spool-path',
  'archive-async',
] as const;

/** Prefixes of `global` options the operator owns: `pg1-host…` (where postgres runs), `config…` (where configuration is). */
export const OPERATOR_OWNED_GLOBAL_PREFIXES = ['pg1-host', 'config'] as const;

/**
 * Restore options refused, as PGO refuses them: the operator sets the stanza, the data directory,
 * what happens at the recovery target and the links; the repository comes from `repoName`.
 */
export const FORBIDDEN_RESTORE_OPTIONS = ['--stanza', '--pg1-path', '--target-action', '--link-map', '--repo'] as const;

/** Backup options refused in `manual.options`: the repository comes from `repoName`. */
export const FORBIDDEN_BACKUP_OPTIONS = ['--stanza', '--pg1-path', '--repo'] as const;

/** Options refused in a PostgresBackup, whose `type` and `repoName` are fields of their own. */
export const FORBIDDEN_POSTGRES_BACKUP_OPTIONS = [...FORBIDDEN_BACKUP_OPTIONS, '--type'] as const;

/**
 * One option per element, as on the command line: `--name=value` or `--name value`. A name
 * matches only as a whole word, so forbidding `--repo` leaves `--repo1-retention-full=2` alone.
 */
const optionPattern = (names: readonly string[]) => `(^|\\s)(${names.join('|')})(=|\\s|$)`;

/**
 * The first option that sets one of `forbidden`, or undefined. Same answer as the CEL rule of
 * {@link refuseOptionsRule}.
 *
 * @example
 * ```ts
 * forbiddenOption(['--type=time', '--target-action=pause'], FORBIDDEN_RESTORE_OPTIONS); // '--target-action=pause'
 * ```
 */
export function forbiddenOption(options: readonly string[] | undefined, forbidden: readonly string[]) {
  const pattern = new RegExp(optionPattern(forbidden));
  return options?.find((option) => pattern.test(option));
}

/** A CEL rule for an array of command-line options that refuses every option in `forbidden`. */
export function refuseOptionsRule(forbidden: readonly string[], why: string) {
  const listed = `${forbidden.slice(0, -1).join(', ')} or ${forbidden[forbidden.length - 1]}`;
  return {
    rule: `self.all(o, !o.matches(r'${optionPattern(forbidden)}'))`,
    message: `options must not set ${listed}: ${why}`,
  };
}

/**
 * Whether the operator owns a `global` option. Any `repoN-…` option must name a declared
 * repository: pgBackRest would otherwise configure a repository nobody declared.
 *
 * @example
 * ```ts
 * operatorOwnsGlobalOption('pg1-path', ['repo1']); // true
 * operatorOwnsGlobalOption('repo2-path', ['repo1']); // true: repo2 is not declared
 * operatorOwnsGlobalOption('repo1-retention-full', ['repo1']); // false
 * ```
 */
export function operatorOwnsGlobalOption(key: string, declaredRepos: readonly string[]): boolean {
  if ((OPERATOR_OWNED_GLOBAL_OPTIONS as readonly string[]).includes(key)) return true;
  if (OPERATOR_OWNED_GLOBAL_PREFIXES.some((prefix) => key.startsWith(prefix))) return true;
  return /^repo[0-9]+-/.test(key) && !declaredRepos.some((repo) => key.startsWith(`${repo}-`));
}

/** CEL on a `global` map: refuses the options the operator owns (not the repoN- rule, which needs the repos). */
export const ownedGlobalOptionsRule = {
  rule: `self.all(k, !(k in ${JSON.stringify(OPERATOR_OWNED_GLOBAL_OPTIONS)}) && ${OPERATOR_OWNED_GLOBAL_PREFIXES.map(
    (p) => `!k.startsWith('${p}')`,
  ).join(' && ')})`,
  message: `these options are set by the operator: ${OPERATOR_OWNED_GLOBAL_OPTIONS.join(', ')}, ${OPERATOR_OWNED_GLOBAL_PREFIXES.map((p) => `${p}*`).join(', ')}`,
};

/** CEL over repoN- keys of `global`, given a CEL predicate `declared(k)` telling whether k's repository is declared. */
export const undeclaredRepoOptionRule = (declared: string) => ({
  rule: `!has(self.global) || self.global.all(k, !k.matches('^repo[0-9]+-') || ${declared})`,
  message: 'a repoN- option in global must name a declared repository',
  fieldPath: '.global',
});

/**
 * The repositories a cluster spec declares, in order; empty without backups.
 *
 * @example
 * ```ts
 * declaredRepoNames({ backups: { pgbackrest: { repos: [{ name: 'repo1' }, { name: 'repo3' }] } } }); // ['repo1', 'repo3']
 * ```
 */
export function declaredRepoNames(spec: {
  backups?: { pgbackrest: { repos: readonly { name: string }[] } };
}): string[] {
  return spec.backups?.pgbackrest.repos.map((repo) => repo.name) ?? [];
}

/** Where a repository keeps its backups, or undefined if admission was bypassed and it names none. */
export function repoStorage(repo: {
  s3?: unknown;
  gcs?: unknown;
  azure?: unknown;
  volume?: unknown;
}): 's3' | 'gcs' | 'azure' | 'volume' | undefined {
  return (['s3', 'gcs', 'azure', 'volume'] as const).find((kind) => repo[kind] !== undefined);
}
