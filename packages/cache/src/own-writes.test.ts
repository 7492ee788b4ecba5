import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OwnWrites } from './own-writes.js';

const object = (rv: string) => ({ metadata: { name: 'a', namespace: 'ns', resourceVersion: rv } });

describe('OwnWrites', () => {
  it('overlays a write until the watch delivers that version', () => {
    const own = new OwnWrites();
    own.recordWrite('ns/a', object('5'));
    assert.equal(own.lookup('ns/a')?.object?.metadata?.resourceVersion, '5');
    own.observed('ns/a', object('4'), false);
    assert.ok(own.lookup('ns/a'), 'an older event does not retire it');
    own.observed('ns/a', object('5'), false);
    assert.equal(own.lookup('ns/a'), undefined);
  });

  it('adds no overlay for a write the watch delivered before its response arrived', () => {
    const own = new OwnWrites();
    own.observed('ns/a', object('7'), false);
    own.recordWrite('ns/a', object('7'));
    assert.equal(own.lookup('ns/a'), undefined, 'otherwise it would hide every later change');
    own.observed('ns/a', object('8'), true);
    own.recordDelete('ns/a');
    assert.equal(own.lookup('ns/a'), undefined);
  });

  it('ends the overlay a DELETE answered with the object (deleted at once) when the watch reports the deletion, either order', () => {
    const incarnation = (rv: string, uid: string) => ({ metadata: { ...object(rv).metadata, uid } });
    const own = new OwnWrites();
    own.recordWrite('ns/a', incarnation('9', 'u1'));
    own.observed('ns/a', incarnation('9', 'u1'), true);
    assert.equal(own.lookup('ns/a'), undefined, 'the deleted Pod must not stay in the cache');
    own.observed('ns/a', incarnation('12', 'u2'), true);
    own.recordWrite('ns/a', incarnation('12', 'u2'));
    assert.equal(own.lookup('ns/a'), undefined, 'the deletion came first');
    own.recordWrite('ns/a', incarnation('20', 'u3'));
    own.observed('ns/a', incarnation('15', 'u2'), true);
    assert.equal(own.lookup('ns/a')?.object?.metadata?.uid, 'u3', 'an older incarnation’s deletion leaves a new one');
  });

  it('drops an older overlay when a newer write turns out to be delivered already', () => {
    const own = new OwnWrites();
    own.recordWrite('ns/a', object('5'));
    own.observed('ns/a', object('6'), false);
    own.recordWrite('ns/a', object('6'));
    assert.equal(own.lookup('ns/a'), undefined, 'version 5 must not hide version 6 and later');
  });

  it('retires overlays a relist already reflects, even one served from the watch cache', () => {
    const own = new OwnWrites();
    own.recordWrite('ns/a', object('5'));
    own.recordWrite('ns/b', object('7'));
    own.recordDelete('ns/c');
    own.caughtUp((key) => ({ 'ns/a': '5', 'ns/b': '6' })[key]);
    assert.equal(own.lookup('ns/a'), undefined, 'the list holds our write');
    assert.ok(own.lookup('ns/b'), 'the list is older than our write');
    assert.equal(own.lookup('ns/c'), undefined, 'the list no longer has what we deleted');
  });

  it('forgets delivered versions after a while, and retires writes a consistent relist covers', () => {
    let clock = 0;
    const own = new OwnWrites(() => clock);
    own.observed('ns/a', object('9'), false);
    clock = 11_000;
    own.observed('ns/b', object('1'), false); // rotates the generations
    clock = 16_500;
    own.observed('ns/b', object('2'), false);
    own.recordWrite('ns/a', object('9'));
    assert.ok(own.lookup('ns/a'), 'version 9 was forgotten, so the write is overlaid');
    own.relisted(17_000);
    assert.equal(own.lookup('ns/a'), undefined, 'a relist begun after the write saw it');
  });

  it('hides an object deleted by us until the watch reports the deletion', () => {
    const own = new OwnWrites();
    own.recordDelete('ns/a');
    assert.ok(own.lookup('ns/a'), 'there is an overlay');
    assert.equal(own.lookup('ns/a')?.object, undefined, 'and it says: gone');
    own.observed('ns/a', object('3'), true);
    assert.equal(own.lookup('ns/a'), undefined);
  });
});
