import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, type RestoreReport } from '../../contract/index.js';
import { isCloneRestoring } from './clone-progress.js';

const pod = (restore?: RestoreReport): Pod => ({
  metadata: {
    name: 'copy-i-0',
    annotations: {
      [ANNOTATION.status]: JSON.stringify({
        role: 'primary',
        ready: false,
        timeline: 1,
        systemIdentifier: '742',
        receivedLsn: '0/3000000',
        replayedLsn: '0/3000000',
        lagBytes: 0,
        updatedAt: new Date().toISOString(),
        ...(restore ? { restore } : {}),
      }),
    },
  },
});

it('holds a clone as restoring until its restore succeeded, though postgres already reports its identity', () => {
  assert.equal(isCloneRestoring(false, []), true, 'not initialised: its first Pod is still to restore');
  assert.equal(
    isCloneRestoring(true, [pod({ id: 'clone', result: 'running' })]),
    true,
    'recovering from the source archive',
  );
  assert.equal(isCloneRestoring(true, [pod({ id: 'clone', result: 'succeeded' })]), false);
  assert.equal(
    isCloneRestoring(true, [pod({ id: 'clone', result: 'succeeded' }), pod()]),
    false,
    'a replica added after',
  );
  assert.equal(isCloneRestoring(true, [pod()]), false);
});
