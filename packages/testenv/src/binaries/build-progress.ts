/** Progress of a long binary build, and the default reporter that prints it to stderr without flooding CI logs. */

/** `fetching` and `fetched` are for prebuilt packages (pgBackRest's .deb); the others are the phases of a Go build. */
export type BuildPhase =
  | 'waiting-for-lock'
  | 'fetching'
  | 'fetched'
  | 'downloading'
  | 'resolving'
  | 'compiling'
  | 'done';

export interface BuildProgress {
  readonly component: string;
  readonly version: string;
  readonly phase: BuildPhase;
  /** Packages compiled so far and the total expected (compiling phase only). */
  readonly built?: number;
  readonly total?: number;
  readonly elapsedMs: number;
}

export type ProgressListener = (progress: BuildProgress) => void;

function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** One human-readable line for a progress event. */
export function formatProgress(p: BuildProgress): string {
  const what = `${p.component} ${p.version}`;
  switch (p.phase) {
    case 'waiting-for-lock':
      return `kanri testenv: another process is building ${what}; waiting (${formatDuration(p.elapsedMs)})`;
    case 'fetching':
      return `kanri testenv: fetching ${what} (${formatDuration(p.elapsedMs)})`;
    case 'downloading':
      return `kanri testenv: downloading Go modules for ${what} (${formatDuration(p.elapsedMs)})`;
    case 'resolving':
      return `kanri testenv: resolving packages of ${what} (${formatDuration(p.elapsedMs)})`;
    case 'compiling': {
      const total = p.total ?? 0;
      const built = p.built ?? 0;
      // go build -v only lists packages it actually compiles, so a warm Go cache finishes well below 100%.
      const pct = total > 0 ? Math.min(99, Math.floor((built / total) * 100)) : 0;
      return `kanri testenv: compiling ${what}: ${built}/${total} packages (${pct}%), ${formatDuration(p.elapsedMs)}`;
    }
    case 'done':
      return `kanri testenv: built ${what} in ${formatDuration(p.elapsedMs)}`;
    case 'fetched':
      return `kanri testenv: fetched ${what} in ${formatDuration(p.elapsedMs)}`;
  }
}

/**
 * Prints progress to a stream: on a TTY one line rewritten in place; elsewhere (CI logs)
 * a line on each phase change and at most one every `intervalMs` in between.
 */
export function streamProgressReporter(
  stream: NodeJS.WriteStream = process.stderr,
  intervalMs = 20_000,
): ProgressListener {
  let lastPhase = '';
  let lastPrint = 0;
  return (p) => {
    const key = `${p.component}:${p.phase}`;
    const now = Date.now();
    const changed = key !== lastPhase;
    if (stream.isTTY) {
      if (!changed && now - lastPrint < 500) return;
      stream.write(`\r\x1b[K${formatProgress(p)}${p.phase === 'done' || p.phase === 'fetched' ? '\n' : ''}`);
    } else {
      if (!changed && now - lastPrint < intervalMs) return;
      stream.write(`${formatProgress(p)}\n`);
    }
    lastPhase = key;
    lastPrint = now;
  };
}
