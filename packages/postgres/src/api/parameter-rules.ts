/**
 * What `spec.config.parameters` may not hold, checked at admission (CEL) with the reason for each
 * group. Names must be plain lower-case setting names: postgres folds `DATA_DIRECTORY` to
 * `data_directory`, which a case-sensitive list would let through, and a newline or `=` in a key
 * would write a second line into postgresql.conf. The lists follow PGO's and CloudNativePG's.
 */
import { AGENT_OWNED_SETTINGS } from '../contract/index.js';

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
] as const;

/** Run shell commands as the database's OS user: whoever can edit the cluster could run anything in its Pods. */
export const SHELL_COMMAND_PARAMETERS = ['archive_cleanup_command', 'recovery_end_command'] as const;

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

/**
 * The CEL rules of `spec.config.parameters`, each with the message that says why. Names must be
 * lower case: postgres folds them anyway, and one spelling per setting is what lets each rule look
 * a name up instead of lowering every key (which the API server's cost budget refuses).
 */
export const parameterRules = [
  {
    rule: "self.all(k, k.matches('^[a-z_][a-z0-9_.]*$'))",
    message:
      'parameter names are lower-case letters, digits, "_" and "." (postgres folds names to lower case; write them so)',
  },
  {
    rule: `${list(RESERVED_PARAMETERS)}.all(n, !(n in self))`,
    message: `these parameters are managed by the operator: ${RESERVED_PARAMETERS.join(', ')}`,
  },
  {
    rule: `${list(SHELL_COMMAND_PARAMETERS)}.all(n, !(n in self))`,
    message: `${SHELL_COMMAND_PARAMETERS.join(' and ')} run shell commands in the instances: not allowed`,
  },
  {
    rule: `!('max_connections' in self) || (string(self['max_connections']).matches('^[0-9]{1,6}$') && int(string(self['max_connections'])) >= ${MAX_CONNECTIONS_RANGE.min} && int(string(self['max_connections'])) <= ${MAX_CONNECTIONS_RANGE.max})`,
    message: `max_connections must be a whole number from ${MAX_CONNECTIONS_RANGE.min} to ${MAX_CONNECTIONS_RANGE.max}: postgres reserves 3 connections for superusers and the agent uses up to 4 more`,
  },
  {
    rule: notOff(NEVER_OFF_PARAMETERS),
    message: `${NEVER_OFF_PARAMETERS.join(' and ')} cannot be off: a crash would leave corrupt data`,
  },
];

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
