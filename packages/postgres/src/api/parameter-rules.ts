/**
 * What `spec.config.parameters` may not hold, checked at admission (CEL) with the reason for each
 * group, and by a pure check that gives the same answers. Names must be plain lower-case setting
 * names: postgres folds `DATA_DIRECTORY` to `data_directory`, which a case-sensitive list would let
 * through, and a newline or `=` in a key would write a second line into postgresql.conf. The lists
 * follow PGO's and CloudNativePG's, and add what reads or writes files, or loads or runs code, at a
 * place the spec names (PostgreSQL's runtime-config chapters, setting by setting).
 */
import { AGENT_OWNED_SETTINGS } from '../contract/index.js';
import { CONTROL_CHARACTER } from './backup-options.js';

/** Set by the operator or the agent: a value here would be dropped, or fight theirs. */
export const RESERVED_PARAMETERS = [
  ...AGENT_OWNED_SETTINGS,
  'restore_command',
  'recovery_target',
  'recovery_target_action',
  'recovery_target_inclusive',
  'recovery_target_lsn',
  'recovery_target_name',
  'recovery_target_time',
  'recovery_target_timeline',
  'recovery_target_xid',
  'promote_trigger_file',
  'data_directory',
  'config_file',
  'hba_file',
  'ident_file',
  'external_pid_file',
  // The socket directory is the agent's, private to the Pod.
  'unix_socket_group',
  // The agent resets a restore's recovery settings with ALTER SYSTEM.
  'allow_alter_system',
] as const;

/** Run shell commands as the database's OS user: whoever can edit the cluster could run anything in its Pods. */
export const SHELL_COMMAND_PARAMETERS = [
  'archive_cleanup_command',
  'recovery_end_command',
  'ssl_passphrase_command',
] as const;

/** Read another file as configuration (any file the postgres user can read): the operator renders every setting. */
export const INCLUDE_DIRECTIVES = ['include', 'include_dir', 'include_if_exists'] as const;

/**
 * Load a shared library (code run inside postgres), or choose where libraries are found (then
 * even an allow-listed name loads whatever sits there). archive_library would also replace the
 * agent's archive_command (the pgBackRest archive).
 */
export const LIBRARY_PARAMETERS = [
  'archive_library',
  'dynamic_library_path',
  'extension_control_path',
  'jit_provider',
  'oauth_validator_libraries',
] as const;

/**
 * Name a file or directory postgres reads or writes, anywhere its user may: the agent reads the
 * server log from stderr (logging_collector is the agent's), so a log file is only a way to write.
 */
export const FILE_PARAMETERS = ['log_directory', 'log_filename', 'stats_temp_directory', 'krb_server_keyfile'] as const;

/**
 * The ssl_ settings users may tune: how TLS is spoken. Every other ssl_ setting names a file (the
 * agent serves the operator's certificates) or runs a command, and is refused.
 */
export const ALLOWED_SSL_PARAMETERS = [
  'ssl_ciphers',
  'ssl_ecdh_curve',
  'ssl_groups',
  'ssl_min_protocol_version',
  'ssl_max_protocol_version',
  'ssl_prefer_server_ciphers',
  'ssl_tls13_ciphers',
] as const;

/** Settings that load libraries by name, limited to PRELOAD_LIBRARIES. */
export const PRELOAD_PARAMETERS = [
  'shared_preload_libraries',
  'session_preload_libraries',
  'local_preload_libraries',
] as const;

/**
 * The libraries a preload setting may name: PostgreSQL's own modules, in every Kanri image (PGDG's
 * server package), that are meant to be preloaded and read no file or command from settings:
 * statistics (pg_stat_statements), plan logging (auto_explain, as CloudNativePG manages it too),
 * buffer cache warming (pg_prewarm), password rules (passwordcheck), a delay on failed logins
 * (auth_delay). Any other name is arbitrary code, or a library the image lacks (postgres would
 * not start).
 */
export const PRELOAD_LIBRARIES = [
  'pg_stat_statements',
  'auto_explain',
  'pg_prewarm',
  'passwordcheck',
  'auth_delay',
] as const;

/** A preload setting's value: a comma-separated list of PRELOAD_LIBRARIES, or empty. */
const PRELOAD_VALUE = `^ *((${PRELOAD_LIBRARIES.join('|')})( *, *(${PRELOAD_LIBRARIES.join('|')}))*)? *$`;

/** Settings that must never be off: a crash would leave corrupt data. */
export const NEVER_OFF_PARAMETERS = ['fsync', 'full_page_writes'] as const;

/**
 * max_connections's safe range. postgres keeps 3 connections for superusers
 * (superuser_reserved_connections) and refuses to start at or below that, with no FATAL line to
 * report; the agent's own pool takes up to 4 of the rest. The top is postgres's own limit.
 */
export const MAX_CONNECTIONS_RANGE = { min: 10, max: 262_143 } as const;

const OFF = ['off', 'false', 'no', '0', 'of', 'fa', 'fal', 'fals', 'n'];

const list = (names: readonly string[]) => JSON.stringify(names);

/** `!(name in self) || value not off`, for each name: one value looked at per name, so the rule stays cheap. */
const notOff = (names: readonly string[], path = 'self') =>
  names.map((n) => `(!('${n}' in ${path}) || !(string(${path}['${n}']).lowerAscii() in ${list(OFF)}))`).join(' && ');

type Parameters = Readonly<Record<string, unknown>>;

/** One rule: its CEL, its message, and the same check in TypeScript (the name it refuses). */
interface ParameterRule {
  readonly rule: string;
  readonly message: string;
  readonly messageExpression?: string;
  readonly refuses: (parameters: Parameters) => string | undefined;
}

const names = (p: Parameters) => Object.keys(p);
const text = (value: unknown) => String(value);
const listed = (group: readonly string[], message: string): ParameterRule => ({
  rule: `${list(group)}.all(n, !(n in self))`,
  message,
  refuses: (p) => group.find((n) => n in p),
});

const rules: readonly ParameterRule[] = [
  {
    rule: "self.all(k, k.matches('^[a-z_][a-z0-9_.]*$'))",
    message:
      'parameter names are lower-case letters, digits, "_" and "." (postgres folds names to lower case; write them so)',
    refuses: (p) => names(p).find((k) => !/^[a-z_][a-z0-9_.]*$/.test(k)),
  },
  listed(RESERVED_PARAMETERS, `these parameters are managed by the operator: ${RESERVED_PARAMETERS.join(', ')}`),
  listed(
    SHELL_COMMAND_PARAMETERS,
    `${SHELL_COMMAND_PARAMETERS.join(', ')} run shell commands in the instances: not allowed`,
  ),
  listed(
    INCLUDE_DIRECTIVES,
    `${INCLUDE_DIRECTIVES.join(', ')} would read another file as configuration (any file the postgres user can read): not allowed, set each parameter here`,
  ),
  listed(
    LIBRARY_PARAMETERS,
    `${LIBRARY_PARAMETERS.join(', ')} load shared libraries (code run inside postgres) or choose where they are found: not allowed (archive_library would also replace the pgBackRest archive)`,
  ),
  listed(
    FILE_PARAMETERS,
    `${FILE_PARAMETERS.join(', ')} name files or directories postgres would read or write anywhere its user may: not allowed (the agent reads the server log from stderr)`,
  ),
  {
    rule: `self.all(k, !k.startsWith('ssl_') || k in ${list(ALLOWED_SSL_PARAMETERS)})`,
    message: `ssl_ parameters other than ${ALLOWED_SSL_PARAMETERS.join(', ')} name certificate, key, CRL or DH files, or a passphrase command: the agent serves the operator's certificates`,
    refuses: (p) =>
      names(p).find((k) => k.startsWith('ssl_') && !(ALLOWED_SSL_PARAMETERS as readonly string[]).includes(k)),
  },
  {
    rule: PRELOAD_PARAMETERS.map(
      (n) => `(!('${n}' in self) || string(self['${n}']).matches(r'${PRELOAD_VALUE}'))`,
    ).join(' && '),
    message: `${PRELOAD_PARAMETERS.join(', ')} may list only ${PRELOAD_LIBRARIES.join(', ')} (comma-separated): any other library is code run inside postgres, or one the image lacks (postgres would not start)`,
    refuses: (p) => PRELOAD_PARAMETERS.find((n) => n in p && !new RegExp(PRELOAD_VALUE).test(text(p[n]))),
  },
  {
    rule: `self.all(k, !string(self[k]).matches(r'${CONTROL_CHARACTER}'))`,
    message: 'parameter values must not hold a control character: a newline would end the line in postgresql.conf',
    messageExpression: `'the value of ' + self.filter(k, string(self[k]).matches(r'${CONTROL_CHARACTER}'))[0] + ' holds a control character: a newline would end its line in postgresql.conf'`,
    refuses: (p) => names(p).find((k) => new RegExp(CONTROL_CHARACTER).test(text(p[k]))),
  },
  {
    rule: `!('max_connections' in self) || (string(self['max_connections']).matches('^[0-9]{1,6}$') && int(string(self['max_connections'])) >= ${MAX_CONNECTIONS_RANGE.min} && int(string(self['max_connections'])) <= ${MAX_CONNECTIONS_RANGE.max})`,
    message: `max_connections must be a whole number from ${MAX_CONNECTIONS_RANGE.min} to ${MAX_CONNECTIONS_RANGE.max}: postgres reserves 3 connections for superusers and the agent uses up to 4 more`,
    refuses: (p) => {
      if (!('max_connections' in p)) return undefined;
      const value = text(p.max_connections);
      const n = Number(value);
      return /^[0-9]{1,6}$/.test(value) && n >= MAX_CONNECTIONS_RANGE.min && n <= MAX_CONNECTIONS_RANGE.max
        ? undefined
        : 'max_connections';
    },
  },
  {
    rule: notOff(NEVER_OFF_PARAMETERS),
    message: `${NEVER_OFF_PARAMETERS.join(' and ')} cannot be off: a crash would leave corrupt data`,
    refuses: (p) =>
      NEVER_OFF_PARAMETERS.find((n) => n in p && OFF.includes(text(p[n]).replace(/[A-Z]/g, (c) => c.toLowerCase()))),
  },
];

/**
 * The CEL rules of `spec.config.parameters`, each with the message that says why. Names must be
 * lower case: postgres folds them anyway, and one spelling per setting is what lets each rule look
 * a name up instead of lowering every key (which the API server's cost budget refuses).
 */
export const parameterRules = rules.map(({ refuses: _, ...cel }) => cel);

/**
 * The first parameter the rules refuse, with the rule's message; undefined when all are allowed.
 * Same answers as {@link parameterRules} (the spec fuzzer checks it against the API server).
 *
 * @example
 * ```ts
 * refusedParameter({ shared_preload_libraries: 'pg_stat_statements' }); // undefined
 * refusedParameter({ include: '/etc/passwd' }); // { name: 'include', why: 'include, include_dir, … not allowed, …' }
 * ```
 */
export function refusedParameter(parameters: Parameters): { name: string; why: string } | undefined {
  for (const rule of rules) {
    const name = rule.refuses(parameters);
    if (name !== undefined) return { name, why: rule.message };
  }
  return undefined;
}

/**
 * The spec-level rule: in synchronous mode, `synchronous_commit` `local` or `off` would acknowledge
 * commits no standby holds, breaking the promise that a failover loses none.
 */
export const synchronousCommitRule = {
  rule: `!has(self.ha) || !has(self.ha.synchronous) || !has(self.config) || !has(self.config.parameters) || !('synchronous_commit' in self.config.parameters) || !(string(self.config.parameters['synchronous_commit']).lowerAscii() in ['local', 'off', 'false', 'no', '0'])`,
  message:
    'synchronous_commit cannot be local or off with ha.synchronous: a commit no standby holds could be lost in a failover (use on, remote_write or remote_apply)',
  fieldPath: '.config.parameters',
};
