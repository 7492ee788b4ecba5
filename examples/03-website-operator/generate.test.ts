import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { Website } from './website-operator.js';

const run = promisify(execFile);
const kanri = fileURLToPath(new URL('../../../packages/cli/dist/src/main.js', import.meta.url));
const operator = fileURLToPath(new URL('./website-operator.js', import.meta.url));

it('kanri generate --check packages the Website operator into a chart that helm lints and renders', async () => {
  const out = await mkdtemp(join(tmpdir(), 'kanri-example-03-'));
  try {
    const { stdout } = await run(
      process.execPath,
      [kanri, 'generate', '--operator', operator, '--out', out, '--no-dockerfile', '--check'],
      { cwd: out, timeout: 600_000 },
    );
    // ServiceAccount, ClusterRole and binding, two Roles and bindings (Lease, webhook certificate),
    // Deployment, the metrics and webhook Services, and the CRD deletion guard's configuration.
    assert.match(stdout, /check: helm lint --strict passed; helm template rendered 11 objects/);
    assert.match(stdout, /ValidatingWebhookConfiguration/);
    const crd = parse(await readFile(join(out, 'chart/website-operator/crds/websites.example.kanri.dev.yaml'), 'utf8'));
    assert.deepEqual(crd, Website.crd);
    const values = parse(await readFile(join(out, 'chart/website-operator/values.yaml'), 'utf8'));
    assert.equal(values.image.repository, 'ghcr.io/kanri-dev/website-operator');
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
