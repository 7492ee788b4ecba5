/**
 * The README's benchmark figures cite the results they come from (readme-figures.ts): every place
 * that quotes a benchmark run's figures names its JSON in bench/results/ (or says there is none),
 * and every JSON the READMEs cite exists.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { citedResults, places, quotesBenchmarkFigures, uncitedFigures } from './readme-figures.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const READMES = ['README.md', 'bench/README.md', 'bench/memory/README.md'];
const read = (file: string) => readFileSync(join(root, file), 'utf8');

describe('README figures and their results', () => {
  it('finds a place that quotes a run without citing it, and accepts one that cites or says why not', () => {
    const text = [
      'Backups (measured 2026-12-01 with `npm run bench:backup`): p99 3.0 s.',
      '',
      'Backups (measured 2026-12-01 with `npm run bench:backup`, [JSON](bench/results/backup-2026-12-01T1809.json)): p99 3.0 s.',
      '',
      '| memory | 16 MiB | 2026-12-01, `npm run bench:memory`; no JSON: kept by none of its runs |',
      '| failures | `npm run bench:failures` (`-- --rows 1,3,6 --trials 3`) |',
      '```',
      'bench:failover 2026-12-01 14.2 s',
      '```',
    ].join('\n');
    assert.deepEqual(
      uncitedFigures(text).map((p) => p.line),
      [1],
    );
    assert.deepEqual(citedResults(places(text)[1]?.text ?? ''), ['backup-2026-12-01T1809.json']);
    assert.equal(
      quotesBenchmarkFigures({ line: 6, text: '| failures | `npm run bench:failures` (`-- --trials 3`) |' }),
      false,
    );
  });

  it('README.md cites the JSON of every benchmark run it quotes figures from', () => {
    const uncited = uncitedFigures(read('README.md')).map((p) => `README.md:${p.line}: ${p.text.slice(0, 100)}`);
    assert.deepEqual(uncited, []);
  });

  for (const file of READMES) {
    it(`every results JSON ${file} cites exists in bench/results/`, () => {
      const cited = places(read(file)).flatMap((p) => citedResults(p.text).map((name) => ({ name, line: p.line })));
      assert.ok(file !== 'README.md' || cited.length > 10, `README.md cites its results (${cited.length} found)`);
      const missing = cited.filter((c) => !existsSync(join(root, 'bench', 'results', c.name)));
      assert.deepEqual(
        missing.map((c) => `${file}:${c.line}: bench/results/${c.name}`),
        [],
      );
    });
  }
});
