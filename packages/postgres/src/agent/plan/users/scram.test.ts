import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildScramVerifier, scramVerifierMatches } from './scram.js';

// Verifiers that PostgreSQL 15 itself stored for CREATE ROLE … PASSWORD 'pencil' and 'ünï:\q'.
const FROM_POSTGRES = {
  pencil:
    'SCRAM-SHA-256$4096:bGIWZV5CHIEJjHvgZF/YGQ==$nd5a8eB5sWOpxJRACWYp1fVhIdyOntGOYgqiRBahKiA=:u+m34XntwjBCG0qEk/YtkRUZEVbuWqanqIgVES364zo=',
  'ünï:\\q':
    'SCRAM-SHA-256$4096:ZUEy6H/rgZ2jPbTfJEcFRw==$EKcA2PP/OWOscTaNq5slVq5lJK5+VQ4GH5PrQtjBUjA=:HI99Wx58hB+7drstrVgGLMgV5f5j2/tL/H+FjfikP+k=',
};

it('computes the same verifier as postgres for the same salt', () => {
  for (const [password, verifier] of Object.entries(FROM_POSTGRES)) {
    const salt = Buffer.from(verifier.split('$')[1]?.split(':')[1] ?? '', 'base64');
    assert.equal(buildScramVerifier(password, salt), verifier);
    assert.equal(scramVerifierMatches(verifier, password), true);
  }
});

it('recognises a wrong password, a malformed verifier and an md5 hash as not matching', () => {
  assert.equal(scramVerifierMatches(FROM_POSTGRES.pencil, 'pencil2'), false);
  assert.equal(scramVerifierMatches('SCRAM-SHA-256$4096:abc', 'pencil'), false);
  assert.equal(scramVerifierMatches('md5a1b2c3', 'pencil'), false);
  assert.equal(scramVerifierMatches(null, 'pencil'), false);
});

it('salts every new verifier afresh, and each matches its password', () => {
  const a = buildScramVerifier('s3cret');
  const b = buildScramVerifier('s3cret');
  assert.notEqual(a, b);
  assert.ok(scramVerifierMatches(a, 's3cret') && scramVerifierMatches(b, 's3cret'));
  assert.equal(a.includes('s3cret'), false);
});
