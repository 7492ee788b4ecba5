/**
 * The pgBackRest `global` options users may not set, and what no spec string written into a
 * configuration file may hold, as constants, as the CEL rules that refuse them at admission and as
 * pure checks that give the same answers (for the operator and for tests). The command-line
 * options of backup and restore are allow-listed in command-options.ts.
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
 * pgBackRest's deprecated names of options the operator owns, which it still reads: `db-path` is
 * `pg1-path`, `db-host` `pg1-host`, `backup-host` `repo1-host` (a host that would receive every
 * backup and WAL segment), and so on.
 */
export const OPERATOR_OWNED_GLOBAL_ALIASES =
  '^(db[0-9]*-(path|host|cmd|config|ssh-port|user|port|socket-path)|backup-(host|cmd|config|ssh-port|user))$';

/**
 * pgBackRest's secret options (those its configuration marks secure, and their deprecated
 * unnumbered names). `global` is copied into ConfigMaps (the restore source a clone reads), so
 * they belong in a file of a Secret listed in `configuration`.
 */
export const CREDENTIAL_GLOBAL_OPTIONS =
  '^repo[0-9]*-(s3-key|s3-key-secret|s3-token|s3-sse-customer-key|gcs-key|azure-key|azure-account|cipher-pass|sftp-private-key-passphrase)$';

/** A control character (a newline above all) would start another line of a configuration file. */
export const CONTROL_CHARACTER = String.raw`[\x00-\x1f\x7f]`;

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
  if (new RegExp(OPERATOR_OWNED_GLOBAL_ALIASES).test(key)) return true;
  return /^repo[0-9]+-/.test(key) && !declaredRepos.some((repo) => key.startsWith(`${repo}-`));
}

/** CEL on a `global` map: refuses the options the operator owns (not the repoN- rule, which needs the repos). */
export const ownedGlobalOptionsRule = {
  rule: `self.all(k, !(k in ${JSON.stringify(OPERATOR_OWNED_GLOBAL_OPTIONS)}) && ${OPERATOR_OWNED_GLOBAL_PREFIXES.map(
    (p) => `!k.startsWith('${p}')`,
  ).join(' && ')} && !k.matches(r'${OPERATOR_OWNED_GLOBAL_ALIASES}'))`,
  message: `these options are set by the operator: ${OPERATOR_OWNED_GLOBAL_OPTIONS.join(', ')}, ${OPERATOR_OWNED_GLOBAL_PREFIXES.map((p) => `${p}*`).join(', ')}, and their deprecated names (db-path, db-host, backup-host, …)`,
};

/**
 * Whether a `global` option is a credential, which only a Secret may hold. Same answer as
 * {@link credentialGlobalOptionsRule}.
 *
 * @example
 * ```ts
 * isCredentialGlobalOption('repo1-s3-key-secret'); // true
 * isCredentialGlobalOption('repo1-s3-key-type'); // false
 * ```
 */
export function isCredentialGlobalOption(key: string): boolean {
  return new RegExp(CREDENTIAL_GLOBAL_OPTIONS).test(key);
}

const CREDENTIAL_WHY =
  'is a credential: put it in a pgBackRest configuration file ([global] section) of a Secret listed in configuration, never in global, which the operator copies into ConfigMaps';

/** CEL on a `global` map: refuses credentials, naming the key. */
export const credentialGlobalOptionsRule = {
  rule: `self.all(k, !k.matches(r'${CREDENTIAL_GLOBAL_OPTIONS}'))`,
  message: `an option ${CREDENTIAL_WHY} (repoN-s3-key, repoN-s3-key-secret, repoN-s3-token, repoN-cipher-pass, …)`,
  messageExpression: `'option ' + self.filter(k, k.matches(r'${CREDENTIAL_GLOBAL_OPTIONS}'))[0] + ${JSON.stringify(` ${CREDENTIAL_WHY}`)}`,
};

/**
 * CEL on a `global` map: keys are pgBackRest option names and values hold no control character;
 * pgbackrest.conf has no quoting, so either would write another line (another option) into it.
 */
export const globalEntriesRules = [
  {
    rule: "self.all(k, k.matches(r'^[a-z0-9][a-z0-9-]*$'))",
    message:
      'keys are pgBackRest option names: lower-case letters, digits and "-" (a control character or "=" would write another line into pgbackrest.conf)',
  },
  {
    rule: `self.all(k, !self[k].matches(r'${CONTROL_CHARACTER}'))`,
    message:
      'values must not hold a control character: pgbackrest.conf has no quoting, so a newline would start another option',
    messageExpression: `'the value of ' + self.filter(k, self[k].matches(r'${CONTROL_CHARACTER}'))[0] + ' holds a control character: pgbackrest.conf has no quoting, so a newline would start another option'`,
  },
];

/**
 * CEL on a string written into a configuration file: no control character.
 *
 * @example
 * ```ts
 * z.string().meta({ 'x-kubernetes-validations': [noControlCharacters('pgbackrest.conf')] });
 * ```
 */
export function noControlCharacters(file: string) {
  return {
    rule: `!self.matches(r'${CONTROL_CHARACTER}')`,
    message: `must not hold a control character: it is written into ${file}, where a newline would start another line`,
  };
}

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
