/**
 * Finds the shell commands a Markdown file documents, and what its `readme-test` markers say
 * about them, so a test can run every command a reader would type. Pure: no I/O.
 *
 * Commands are the lines of ```sh / ```bash / ```shell blocks (comment lines and trailing
 * `# comments` dropped, indentation kept for heredocs), the `$ ` lines of ```console and untagged blocks, and inline code spans
 * that start with `npx kanri `. A marker is an HTML comment in the lines right before a block:
 *
 *   <!-- readme-test: skip: REASON -->                      none of the block's commands run
 *   <!-- readme-test: skip `COMMAND`: REASON -->            that command does not run
 *   <!-- readme-test: replace `COMMAND` with `SCRIPT`: REASON -->   SCRIPT runs in its place
 *
 * A marker without a reason, or naming a command its block does not hold, is an error, so the
 * markers cannot go stale silently.
 */

export interface Marker {
  readonly kind: 'skip' | 'replace';
  /** The command it applies to; absent for a whole-block skip. */
  readonly command?: string;
  readonly replacement?: string;
  readonly reason: string;
  readonly line: number;
}

export interface CommandBlock {
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: string;
  readonly commands: readonly string[];
  readonly markers: readonly Marker[];
}

export interface ReadmeCommands {
  readonly blocks: readonly CommandBlock[];
  /** Inline `npx kanri …` spans outside code blocks, with their 1-based lines. */
  readonly inline: readonly { readonly command: string; readonly line: number }[];
}

/** One step of a block's script: a command to run, or one left out and why. */
export type Step =
  | { readonly run: string; readonly documented: string }
  | { readonly skipped: string; readonly reason: string };

const SHELL_LANGS = new Set(['sh', 'bash', 'shell']);
const PROMPT_LANGS = new Set(['', 'console', 'text']);
const MARKER = /^<!--\s*readme-test:\s*(.*?)\s*-->$/;
const SKIP = /^skip(?:\s+`([^`]+)`)?\s*:\s*(.*)$/;
const REPLACE = /^replace\s+`([^`]+)`\s+with\s+`([^`]+)`\s*:\s*(.*)$/;

function parseMarker(text: string, line: number): Marker {
  const skip = SKIP.exec(text);
  const replace = REPLACE.exec(text);
  const marker: Marker | undefined = skip
    ? { kind: 'skip', ...(skip[1] ? { command: skip[1] } : {}), reason: skip[2] ?? '', line }
    : replace
      ? { kind: 'replace', command: replace[1], replacement: replace[2], reason: replace[3] ?? '', line }
      : undefined;
  if (!marker) throw new Error(`line ${line}: unreadable readme-test marker "${text}"`);
  if (!marker.reason) throw new Error(`line ${line}: a readme-test marker must say why`);
  return marker;
}

/** Drops a trailing ` # comment` (the README's commands hold no `#` inside quotes). */
const withoutComment = (line: string) => line.replace(/\s+#.*$/, '').trim();

function commandsOf(lang: string, body: readonly string[]): string[] {
  const joined = body
    .join('\n')
    .replace(/\\\n\s*/g, ' ')
    .split('\n');
  // Indentation is kept: it means nothing to bash, but everything to a YAML manifest in a heredoc.
  const indented = (line: string) => `${/^\s*/.exec(line)?.[0] ?? ''}${withoutComment(line)}`;
  if (SHELL_LANGS.has(lang)) return joined.filter((l) => withoutComment(l) && !l.trim().startsWith('#')).map(indented);
  if (PROMPT_LANGS.has(lang)) return joined.filter((l) => l.startsWith('$ ')).map((l) => withoutComment(l.slice(2)));
  return [];
}

/** Splits `markdown` into its command blocks, their markers and the inline `npx kanri` commands. */
export function readmeCommands(markdown: string): ReadmeCommands {
  const lines = markdown.split('\n');
  const blocks: CommandBlock[] = [];
  const inline: { command: string; line: number }[] = [];
  let pending: Marker[] = [];
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] ?? '';
    const fence = /^(`{3,})\s*([\w$-]*)/.exec(text);
    if (fence) {
      const close = lines.findIndex((l, j) => j > i && l.startsWith(fence[1] ?? '```') && !l.slice(3).trim());
      if (close < 0) throw new Error(`line ${i + 1}: a code block that never closes`);
      const lang = fence[2] ?? '';
      const commands = commandsOf(lang, lines.slice(i + 1, close));
      if (commands.length > 0 || pending.length > 0) blocks.push({ line: i + 1, lang, commands, markers: pending });
      pending = [];
      i = close;
      continue;
    }
    const marker = MARKER.exec(text.trim());
    if (marker) {
      pending.push(parseMarker(marker[1] ?? '', i + 1));
      continue;
    }
    if (text.trim() && pending.length > 0) {
      throw new Error(`line ${pending[0]?.line}: a readme-test marker must come right before a code block`);
    }
    for (const span of text.matchAll(/`(npx kanri [^`]+)`/g)) inline.push({ command: span[1] ?? '', line: i + 1 });
  }
  if (pending.length > 0) throw new Error(`line ${pending[0]?.line}: a readme-test marker after the last code block`);
  return { blocks, inline };
}

/** What a block's script does, command by command, after its markers; throws on a stale marker. */
export function stepsOf(block: CommandBlock): Step[] {
  for (const marker of block.markers) {
    if (marker.command !== undefined && !block.commands.includes(marker.command)) {
      throw new Error(`line ${marker.line}: the marker names \`${marker.command}\`, which the block does not hold`);
    }
  }
  const wholeBlock = block.markers.find((m) => m.kind === 'skip' && m.command === undefined);
  return block.commands.map((command): Step => {
    if (wholeBlock) return { skipped: command, reason: wholeBlock.reason };
    const marker = block.markers.find((m) => m.command === command);
    if (marker?.kind === 'skip') return { skipped: command, reason: marker.reason };
    if (marker?.kind === 'replace') return { run: marker.replacement ?? '', documented: command };
    return { run: command, documented: command };
  });
}
