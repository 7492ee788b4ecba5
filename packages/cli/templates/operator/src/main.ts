/** The operator's entry point in its container: run every controller until SIGTERM, then stop gracefully. */
import operator from './operator.js';

const manager = await operator.manager();
await manager.start();
