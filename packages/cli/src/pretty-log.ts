/**
 * Human-readable logs for `kanri dev run`: the runtime's pino JSON lines, one short line each
 * (`12:03:04.512 INFO  website default/hello  reconcile failed  retries=3 err="…"`). In the
 * cluster the same logger writes JSON; only the destination differs.
 */

const LEVELS: Record<number, [label: string, color: string]> = {
  10: ['TRACE', '90'],
  20: ['DEBUG', '36'],
  30: ['INFO ', '32'],
  40: ['WARN ', '33'],
  50: ['ERROR', '31'],
  60: ['FATAL', '35'],
};

// Shown elsewhere in the line, or noise for a person at a terminal.
const OMITTED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'controller', 'key', 'informer']);

function paint(text: string, code: string, color: boolean): string {
  return color ? `\x1b[${code}m${text}\x1b[0m` : text;
}

/** `13:04:05.042` in the local time zone, like the clock on the person's wall. */
function localTime(date: Date): string {
  return `${date.toTimeString().slice(0, 8)}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (value && typeof value === 'object' && 'message' in value && typeof value.message === 'string') {
    return JSON.stringify(value.message); // an error serialized by pino: its message says enough here
  }
  return JSON.stringify(value);
}

/** One pino JSON line as one readable line; anything that is not JSON passes through unchanged. */
export function formatLogLine(line: string, color = false): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.replace(/\n$/, '');
  }
  const [label, code] = LEVELS[record.level as number] ?? [String(record.level).padEnd(5), '0'];
  const time = typeof record.time === 'number' ? localTime(new Date(record.time)) : '';
  const where = [record.controller ?? record.informer, record.key].filter((v) => typeof v === 'string').join(' ');
  const fields = Object.entries(record)
    .filter(([k, v]) => !OMITTED.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join(' ');
  const parts = [paint(time, '90', color), paint(label, code, color)];
  if (where) parts.push(paint(where, '1', color));
  parts.push(String(record.msg ?? ''));
  if (fields) parts.push(paint(fields, '90', color));
  return parts.join(' ');
}

/** A pino destination that writes formatted lines to `out`. */
export function prettyDestination(out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): {
  write(chunk: string): void;
} {
  const color = Boolean(out.isTTY) && !process.env.NO_COLOR;
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line) out.write(`${formatLogLine(line, color)}\n`);
    },
  };
}
