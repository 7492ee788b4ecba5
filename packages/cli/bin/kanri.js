#!/usr/bin/env node
// The `kanri` bin, committed rather than compiled: npm links a workspace's bin into
// node_modules/.bin only if the target file exists when `npm ci` runs, and dist/ is compiled
// after that. Pointing the bin at this file makes the link independent of build order.
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/main.js', import.meta.url);
if (!existsSync(main)) {
  console.error('kanri: the CLI is not built yet; run `npm run build` (tsc -b) in the Kanri checkout first.');
  process.exit(1);
}
await import(main.href);
