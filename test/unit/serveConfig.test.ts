import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseServeConfig, ConfigError } from '../../src/serve/config.js';

const valid = {
  kubeconfig: 'kc',
  apiservers: [
    { name: 'kas-a', hostname: 'node-1', address: '10.0.0.1:6444', sidecar: { listen: '10.0.0.1:6443', servingCert: 'a.crt', servingKey: 'a.key' } },
    { name: 'kas-b', hostname: 'node-2', address: '10.0.0.2:6444', sidecar: { listen: '10.0.0.2:6443', servingCert: 'b.crt', servingKey: 'b.key' } },
  ],
  tls: { clientCa: 'ca.crt', frontProxyClientCert: 'fp.crt', frontProxyClientKey: 'fp.key', peerCa: 'ca.crt' },
  xds: { unixSocket: 'xds.sock' },
};

function problemsOf(raw: unknown): string[] {
  try {
    parseServeConfig(raw as never, '/etc/mvproxy', false);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return [];
}

describe('serve configuration', () => {
  it('a complete configuration parses, with paths resolved against its folder', () => {
    const config = parseServeConfig(valid, '/etc/mvproxy', false);
    assert.equal(config.kubeconfig, '/etc/mvproxy/kc');
    assert.deepEqual(config.apiservers[1]?.address, { host: '10.0.0.2', port: 6444 });
    assert.equal(config.tls.peerServerName, 'kubernetes.default.svc');
    assert.equal(config.xds.unixSocket, '/etc/mvproxy/xds.sock');
    assert.equal(config.departedGraceSeconds, 300);
  });

  it('every problem is reported at once, naming its field', () => {
    const problems = problemsOf({ apiservers: [{ name: 'Bad_Name', address: 'nowhere' }], tls: {}, xds: {} });
    for (const field of [
      'kubeconfig',
      'apiservers[0].name',
      'apiservers[0].hostname',
      'apiservers[0].address',
      'apiservers[0].sidecar',
      'tls.clientCa',
      'xds',
    ]) {
      assert.ok(
        problems.some((p) => p.startsWith(field)),
        `expected a problem about ${field} in ${JSON.stringify(problems)}`,
      );
    }
  });

  it('two apiservers with the same hostname are contradictory', () => {
    const second = { ...valid.apiservers[1], hostname: 'node-1' };
    assert.ok(problemsOf({ ...valid, apiservers: [valid.apiservers[0], second] }).some((p) => /hostname node-1 is used twice/.test(p)));
  });

  it('a sidecar listening on its own apiserver address is contradictory', () => {
    const a = { ...valid.apiservers[0], sidecar: { ...valid.apiservers[0]?.sidecar, listen: '10.0.0.1:6444' } };
    assert.ok(problemsOf({ ...valid, apiservers: [a] }).some((p) => /sidecar.listen and address are the same/.test(p)));
  });

  it('a port out of range is rejected', () => {
    const a = { ...valid.apiservers[0], address: '10.0.0.1:70000' };
    assert.ok(problemsOf({ ...valid, apiservers: [a] }).some((p) => /is not host:port/.test(p)));
  });

  it('a peer egress proxy is read as host:port', () => {
    assert.deepEqual(parseServeConfig({ ...valid, peerEgressProxy: 'proxy.internal:3128' }, '/etc/mvproxy', false).peerEgressProxy, {
      host: 'proxy.internal',
      port: 3128,
    });
    assert.ok(problemsOf({ ...valid, peerEgressProxy: 'no-port' }).some((p) => p.startsWith('peerEgressProxy')));
  });

  it('the admin section gives the HTTP listener and the admin API socket, resolved against the config folder', () => {
    const config = parseServeConfig({ ...valid, admin: { listen: '127.0.0.1:9464', socket: 'admin.sock' } }, '/etc/mvproxy', false);
    assert.deepEqual(config.admin, { http: { host: '127.0.0.1', port: 9464 }, socket: '/etc/mvproxy/admin.sock' });
  });

  it('an admin section with neither listen nor socket is reported', () => {
    assert.ok(problemsOf({ ...valid, admin: {} }).some((p) => p.startsWith('admin: set listen') && p.includes('socket')));
  });

  it('referenced files must exist when checked', () => {
    assert.throws(() => parseServeConfig(valid, '/nonexistent', true), /does not exist/);
  });
});
