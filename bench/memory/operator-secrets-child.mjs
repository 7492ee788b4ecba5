#!/usr/bin/env node
// The PostgreSQL operator as operator/main.js runs it, with one change when BENCH_CACHE_ALL=1: no
// per-kind cache selector, so its Secret informer holds every Secret (the operator before issue 16,
// finding 7). KUBECONFIG and POD_NAMESPACE come from the driver.
import { postgresOperator } from '../../packages/postgres/dist/src/index.js';

const manager = await postgresOperator.manager(process.env.BENCH_CACHE_ALL === '1' ? { cache: {} } : {});
await manager.start();
