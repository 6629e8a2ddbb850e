import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aptInstallCommand, DEBIAN_PACKAGES, findExecutable } from '../../../../src/tools/install/debianPackages.js';

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

test('several packages are installed by one apt-get run', () => {
  assert.deepEqual(aptInstallCommand(['nghttp2-client', 'prometheus'], true), {
    cmd: 'apt-get',
    args: ['install', '-y', '--no-install-recommends', 'nghttp2-client', 'prometheus'],
  });
});

test("the install step's Debian packages include h2load for the benchmark, Prometheus for the dashboard test, ip for the sandbox's node layout and chromium for the status page test", () => {
  assert.deepEqual(
    DEBIAN_PACKAGES.map((p) => [p.binary, p.pkg]),
    [
      ['h2load', 'nghttp2-client'],
      ['prometheus', 'prometheus'],
      ['ip', 'iproute2'],
      ['chromium', 'chromium'],
    ],
  );
});
