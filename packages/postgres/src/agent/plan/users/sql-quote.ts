/** Quoting for SQL text where parameters cannot be bound (role, database names, passwords in DDL). */

/**
 * A double-quoted identifier; embedded double quotes are doubled. NUL is refused (postgres would cut there).
 *
 * @example
 * ```ts
 * quoteIdent('app "x"'); // '"app ""x"""'
 * ```
 */
export function quoteIdent(name: string): string {
  if (name.includes('\0')) throw new Error('an identifier must not contain NUL');
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * A string literal for standard_conforming_strings = on (the default since 9.1): quotes doubled,
 * backslashes taken literally. Refuses NUL.
 *
 * @example
 * ```ts
 * quoteLiteral("it's"); // "'it''s'"
 * ```
 */
export function quoteLiteral(value: string): string {
  if (value.includes('\0')) throw new Error('a literal must not contain NUL');
  return `'${value.replace(/'/g, "''")}'`;
}
