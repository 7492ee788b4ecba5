/**
 * Reads rendered configuration files back, line by line, for the spec fuzzer: a line the spec did
 * not intend (a setting split by a newline, an option smuggled into pgbackrest.conf, a value that
 * does not read back as the spec wrote it) is a problem, named.
 */

/** Settings the operator adds to every rendered parameter list. */
const OPERATOR_DEFAULTS = new Set([
  'wal_keep_size',
  'max_slot_wal_keep_size',
  'wal_retrieve_retry_interval',
  'password_encryption',
  'archive_timeout',
  'kanri.config_hash',
]);

/** What postgres reads for a quoted value: `''` is a quote, `\n` and octal escapes a character. */
function unquote(quoted: string): string {
  const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
  return quoted.slice(1, -1).replace(/''|\\([0-7]{1,3}|[^0-7])/g, (match, escaped: string | undefined) => {
    if (match === "''") return "'";
    if (escaped === undefined) return match;
    if (/^[0-7]/.test(escaped)) return String.fromCharCode(Number.parseInt(escaped, 8));
    return ESCAPES[escaped] ?? escaped;
  });
}

/**
 * The lines of the operator's postgresql.conf parameters that are not one setting of the spec (or
 * one the operator adds), each setting once, with its value read back as the spec wrote it.
 */
export function postgresConfProblems(text: string, parameters: Readonly<Record<string, unknown>>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const match = /^([a-z_][a-z0-9_.]*) = ('(?:[^'\\\n]|''|\\[^\n])*'|-?[0-9]+)$/.exec(line);
    if (!match) {
      problems.push(`not one setting: ${JSON.stringify(line)}`);
      continue;
    }
    const [, key = '', raw = ''] = match;
    if (seen.has(key)) problems.push(`${key} set twice`);
    seen.add(key);
    const value = raw.startsWith("'") ? unquote(raw) : raw;
    if (key in parameters) {
      if (value !== String(parameters[key])) problems.push(`${key} reads back as ${JSON.stringify(value)}`);
    } else if (!OPERATOR_DEFAULTS.has(key))
      problems.push(`a setting the spec did not ask for: ${JSON.stringify(line)}`);
  }
  for (const key of Object.keys(parameters)) if (!seen.has(key)) problems.push(`${key} missing`);
  return problems;
}

/**
 * The lines of a rendered pgbackrest.conf that are not a section, the header comment, or one of
 * the options the builder meant to write with the value it meant.
 */
export function pgbackrestConfProblems(text: string, options: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (line === '' || (index === 0 && line.startsWith('# '))) continue;
    if (/^\[[A-Za-z0-9._-]+\]$/.test(line)) continue;
    const equals = line.indexOf('=');
    const key = line.slice(0, equals);
    if (equals < 1 || !(key in options)) {
      problems.push(`a line the builder did not mean: ${JSON.stringify(line)}`);
      continue;
    }
    seen.add(key);
    if (line.slice(equals + 1) !== options[key]) problems.push(`${key} written as ${JSON.stringify(line)}`);
  }
  for (const key of Object.keys(options)) if (!seen.has(key)) problems.push(`${key} missing`);
  return problems;
}
