// Issue 12: `mvproxy bootstrap` puts Envoy's admin interface on a Unix socket unless a port is asked for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));

interface AdminAddress {
  admin: { address: { pipe?: { path: string; mode: number }; socket_address?: { address: string; port_value: number } } };
}

const bootstrap = (...flags: string[]): AdminAddress =>
  JSON.parse(
    execFileSync(process.execPath, [cli, 'bootstrap', '--node', 'kas-a', '--xds-socket', '/run/mvproxy/xds.sock', ...flags], { encoding: 'utf8' }),
  ) as AdminAddress;

describe('mvproxy bootstrap: where Envoy admin listens', () => {
  it('by default on a Unix socket named after the node, owner only', () => {
    assert.deepEqual(bootstrap().admin.address, { pipe: { path: '/run/mvproxy/envoy-kas-a-admin.sock', mode: 0o600 } });
  });

  it('on the socket --admin-socket names', () => {
    assert.equal(bootstrap('--admin-socket', '/var/run/x.sock').admin.address.pipe?.path, '/var/run/x.sock');
  });

  it('on loopback only with --admin-port', () => {
    assert.deepEqual(bootstrap('--admin-port', '9901').admin.address, { socket_address: { address: '127.0.0.1', port_value: 9901 } });
  });

  it('refuses both at once', () => {
    assert.throws(() => bootstrap('--admin-port', '9901', '--admin-socket', '/x.sock'), /at most one of --admin-socket PATH or --admin-port N/);
  });
});

interface StaticListeners {
  static_resources: { listeners?: Array<{ name: string; address: { socket_address: { address: string; port_value: number } } }> };
}

describe('mvproxy bootstrap --stats-port: a loopback listener for Prometheus', () => {
  const statics = (...flags: string[]): StaticListeners => bootstrap(...flags) as unknown as StaticListeners;

  it('listens on 127.0.0.1 at the port given', () => {
    assert.deepEqual(
      statics('--stats-port', '9902').static_resources.listeners?.map((l) => [l.name, l.address.socket_address]),
      [['mvproxy_stats', { address: '127.0.0.1', port_value: 9902 }]],
    );
  });

  it('is absent unless asked for', () => {
    assert.equal(statics().static_resources.listeners, undefined);
  });

  it('refuses an admin interface on a port chosen at random', () => {
    assert.throws(() => bootstrap('--admin-port', '0', '--stats-port', '9902'), /--stats-port needs the admin interface at a known address/);
  });
});

describe('mvproxy bootstrap: which sidecar config the Envoy runs', () => {
  const node = (...flags: string[]) => (bootstrap(...flags) as unknown as { node: { id: string; metadata?: Record<string, string> } }).node;

  it('by default the one its node id names, with no metadata', () => {
    assert.deepEqual(node(), { id: 'kas-a', cluster: 'mvproxy' });
  });

  it("with --apiserver, that apiserver's, named in node.metadata", () => {
    assert.deepEqual(node('--apiserver', 'kas-b'), { id: 'kas-a', cluster: 'mvproxy', metadata: { apiserver: 'kas-b' } });
  });
});
