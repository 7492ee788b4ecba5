#!/usr/bin/env node
/** The `kanri` command. Errors are printed as one clear line (the stack only with KANRI_DEBUG=1) and exit non-zero. */
import { Command } from 'commander';
import { devCommand } from './commands/dev.js';
import { generateCommand } from './commands/generate.js';
import { initCommand } from './commands/init.js';
import { testenvCommand } from './commands/testenv.js';

const program = new Command('kanri')
  .description('Kanri: the Kubernetes Operator pattern for TypeScript')
  .showHelpAfterError()
  .addCommand(initCommand())
  .addCommand(devCommand())
  .addCommand(generateCommand())
  .addCommand(testenvCommand());

try {
  await program.parseAsync();
} catch (error) {
  console.error(process.env.KANRI_DEBUG ? error : `kanri: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
