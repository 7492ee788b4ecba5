#!/usr/bin/env node
/** `npm start` / `npm stop`: a 3-instance PostgreSQL cluster on a local control plane. */
import { Command } from 'commander';
import { demoDir, down, serve, up } from './demo.js';

const program = new Command('postgres-demo')
  .description('A real 3-instance PostgreSQL cluster run by the Kanri operator on a local control plane')
  .showHelpAfterError();
program
  .command('up')
  .description('start the control plane, the operator and the cluster in the background; print how to connect')
  .action(() => up());
program
  .command('down')
  .description('stop everything `up` started and remove its files')
  .action(() => down());
program.command('serve', { hidden: true }).action(() => serve(process.env.KANRI_DEMO_DIR ?? demoDir()));

try {
  await program.parseAsync();
} catch (error) {
  console.error(
    process.env.KANRI_DEBUG ? error : `postgres-demo: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exitCode = 1;
}
