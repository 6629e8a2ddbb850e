import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aptInstallCommand, findExecutable } from '../../src/install/debianPackages.js';

test('apt-get install runs directly as root, through non-interactive sudo otherwise', () => {
  assert.deepEqual(aptInstallCommand('nghttp2-client', true), { cmd: 'apt-get', args: ['install', '-y', '--no-install-recommends', 'nghttp2-client'] });
  assert.deepEqual(aptInstallCommand('nghttp2-client', false), {
    cmd: 'sudo',
    args: ['-n', 'apt-get', 'install', '-y', '--no-install-recommends', 'nghttp2-client'],
  });
});

test('executables are found on the given PATH, or by absolute path', () => {
  assert.equal(findExecutable('sh', '/nonexistent:/bin'), '/bin/sh');
  assert.equal(findExecutable('sh', '/nonexistent'), undefined);
  assert.equal(findExecutable('/bin/sh'), '/bin/sh');
  assert.equal(findExecutable('/nonexistent/h2load'), undefined);
});
