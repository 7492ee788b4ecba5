/**
 * The convention by which the README quotes benchmark figures, made checkable: a place that quotes
 * figures from a benchmark run cites the JSON that run wrote, as a link to
 * `bench/results/<file>.json` (in bench/README.md, `results/<file>.json`), or says `no JSON` and
 * why. "A place" is a table row or a paragraph; it quotes a run's figures when it names a
 * benchmark (`bench:<name>`), a date, and a figure (a number with a unit). Every cited file must
 * exist: a renamed or deleted result breaks the link, and this says so.
 */

/** A table row or paragraph of a Markdown file, outside code blocks, with its first line's number. */
export interface Place {
  readonly line: number;
  readonly text: string;
}

/** The table rows and paragraphs of `markdown`, outside fenced code blocks and headings. */
export function places(markdown: string): Place[] {
  const found: Place[] = [];
  let paragraph: string[] = [];
  let start = 0;
  let fenced = false;
  const flush = () => {
    if (paragraph.length > 0) found.push({ line: start, text: paragraph.join('\n') });
    paragraph = [];
  };
  markdown.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      flush();
      return;
    }
    if (fenced) return;
    if (line.startsWith('|')) {
      flush();
      found.push({ line: i + 1, text: line });
      return;
    }
    if (line.trim() === '' || line.startsWith('#')) {
      flush();
      return;
    }
    if (paragraph.length === 0) start = i + 1;
    paragraph.push(line);
  });
  flush();
  return found;
}

/** The results files a place cites (file names under bench/results/). */
export function citedResults(text: string): string[] {
  return [...text.matchAll(/(?:^|[(/\s[])results\/([\w.-]+\.json)/g)].map((m) => m[1] as string);
}

const BENCHMARK = /\bbench:[a-z]+/;
const DATE = /\b20\d\d-\d\d-\d\d\b/;
// A number with a unit, outside inline code and link targets (a command's `--trials 3` is no figure).
const FIGURE = /\d(?:[\d,.]*\d)?\s?(?:ms|s|min|MiB|GiB|MB\/s|MB|GB|×|%|TPS)(?![\w])/;
const prose = (text: string) => text.replace(/`[^`]*`/g, '').replace(/\]\([^)]*\)/g, ']');

/** Whether `place` quotes a benchmark run's figures (see the file comment). */
export function quotesBenchmarkFigures(place: Place): boolean {
  return BENCHMARK.test(place.text) && DATE.test(place.text) && FIGURE.test(prose(place.text));
}

/** Each place that quotes a benchmark run's figures without citing its JSON or saying there is none. */
export function uncitedFigures(markdown: string): Place[] {
  return places(markdown).filter(
    (p) => quotesBenchmarkFigures(p) && citedResults(p.text).length === 0 && !/\bno JSON\b/.test(p.text),
  );
}
