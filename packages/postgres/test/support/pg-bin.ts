/**
 * The PostgreSQL these tests run outside process nodes (whose images set PG_BIN per tag): PG_BIN
 * when the environment names one, else Debian's 15, which scripts/bootstrap.mjs installs. Chosen
 * here, by the tests, because the agent itself never guesses it.
 */
import { DEBIAN_POSTGRES_BIN } from '@kanri/testenv';

export const TEST_PG_BIN = process.env.PG_BIN || DEBIAN_POSTGRES_BIN;
