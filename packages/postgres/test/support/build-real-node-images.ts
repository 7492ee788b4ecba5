/**
 * Builds the images of real-nodes.test.ts (the operator's and the instance's Dockerfile targets),
 * which the failover files on real nodes share. run-tests.mjs runs this before the timed failover
 * files: after a source change the build keeps a core busy for a minute, and beside failover-rto it
 * took 1.2 s of that file's 1.9 s margin on its bound (CI, 2026-12-04). The files find the images
 * cached. A build that fails here is only reported: the file that needs the image fails with it.
 */
import { buildImages } from '@kanri/testenv';
import { realNodeImageBuilds } from '../harness.js';

try {
  const built = await buildImages(realNodeImageBuilds());
  console.log(`# real-node images: ${built.map((i) => `${i.tag} in ${(i.ms / 1000).toFixed(1)} s`).join(', ')}`);
} catch (error) {
  console.log(`# real-node images not built before the timed files: ${(error as Error).message}`);
}
