// The sidecar's Envoy bootstrap (mvproxy bootstrap).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sidecarBootstrap } from '../../../src/xds/bootstrap.js';

describe('sidecar bootstrap', () => {
  it('envoy/bootstrap.example.json is what sidecarBootstrap produces for the documented options', () => {
    const example = new URL('../../../../envoy/bootstrap.example.json', import.meta.url);
    const expected = sidecarBootstrap({
      nodeId: 'apiserver-1',
      controlPlane: { unixSocket: '/run/mvproxy/xds.sock' },
      admin: { unixSocket: '/run/mvproxy/envoy-apiserver-1-admin.sock' },
    });
    assert.deepEqual(JSON.parse(readFileSync(example, 'utf8')), expected);
  });

  it("raises the control plane cluster's circuit breakers: every ext_proc stream in flight is a request on it", () => {
    const bootstrap = sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { port: 0 } });
    const clusters = (bootstrap['static_resources'] as { clusters: Array<Record<string, unknown>> }).clusters;
    const cluster = clusters.find((c) => c['name'] === 'mvproxy_xds');
    assert.deepEqual(cluster?.['circuit_breakers'], {
      thresholds: [{ priority: 'DEFAULT', max_connections: 1_000_000, max_pending_requests: 1_000_000, max_requests: 1_000_000, max_retries: 1_000_000 }],
    });
  });

  it('limits client connections with the overload manager (100000 by default, configurable); the admin interface is exempt', () => {
    const monitors = (bootstrap: Record<string, unknown>): unknown => (bootstrap['overload_manager'] as { resource_monitors: unknown }).resource_monitors;
    const monitor = (max: number): unknown => [
      {
        name: 'envoy.resource_monitors.global_downstream_max_connections',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig',
          max_active_downstream_connections: max,
        },
      },
    ];
    const bootstrap = sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { port: 0 } });
    assert.deepEqual(monitors(bootstrap), monitor(100_000));
    assert.equal((bootstrap['admin'] as Record<string, unknown>)['ignore_global_conn_limit'], true);
    const limited = sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { port: 0 }, maxDownstreamConnections: 5000 });
    assert.deepEqual(monitors(limited), monitor(5000));
  });

  it('points ADS, CDS and LDS at the control plane cluster with node sent once, reconnecting after 0.1 s backing off to 2 s', () => {
    const bootstrap = sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { port: 0 } });
    assert.deepEqual(bootstrap['dynamic_resources'], {
      ads_config: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [{ envoy_grpc: { cluster_name: 'mvproxy_xds', retry_policy: { retry_back_off: { base_interval: '0.1s', max_interval: '2s' } } } }],
        set_node_on_first_message_only: true,
      },
      cds_config: { ads: {}, resource_api_version: 'V3' },
      lds_config: { ads: {}, resource_api_version: 'V3' },
    });
  });

  it('a stats listener on 127.0.0.1 routes only GET /stats/prometheus to the admin socket, everything else to a 404', () => {
    const bootstrap = sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { unixSocket: '/a.sock' }, stats: { port: 9901 } });
    const statics = bootstrap['static_resources'] as { clusters: Array<Record<string, unknown>>; listeners: Array<Record<string, unknown>> };
    const admin = statics.clusters.find((c) => c['name'] === 'envoy_admin');
    assert.deepEqual(admin?.['load_assignment'], {
      cluster_name: 'envoy_admin',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { pipe: { path: '/a.sock' } } } }] }],
    });
    const [listener] = statics.listeners;
    assert.deepEqual(listener?.['address'], { socket_address: { address: '127.0.0.1', port_value: 9901 } });
    const text = JSON.stringify(listener);
    const hcm = JSON.parse(text).filter_chains[0].filters[0].typed_config as {
      normalize_path: boolean;
      route_config: { virtual_hosts: Array<{ routes: unknown[] }> };
    };
    assert.equal(hcm.normalize_path, true);
    assert.deepEqual(hcm.route_config.virtual_hosts[0]?.routes, [
      {
        match: { path: '/stats/prometheus', headers: [{ name: ':method', string_match: { exact: 'GET' } }] },
        route: { cluster: 'envoy_admin', timeout: '10s' },
      },
      { match: { prefix: '/' }, direct_response: { status: 404 } },
    ]);
  });

  it('has no stats listener unless asked, and refuses one when the admin interface has no fixed address', () => {
    const bootstrap = sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { unixSocket: '/a.sock' } });
    assert.equal((bootstrap['static_resources'] as Record<string, unknown>)['listeners'], undefined);
    assert.throws(() => sidecarBootstrap({ nodeId: 'n', controlPlane: { unixSocket: '/s' }, admin: { port: 0 }, stats: { port: 9901 } }), /known address/);
  });
});
