// mvproxy's xDS metrics, as the dashboard reads them (deploy/grafana).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics, recordReadiness, recordSidecarSync, xdsMetricHooks } from '../../src/metrics.js';

const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

async function sample(text: Promise<string>, series: string): Promise<number | undefined> {
  const line = (await text).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('the first push of a type to a sidecar makes its ACK, NACK and held-back counters exist at 0', async () => {
  const metrics = createMetrics();
  xdsMetricHooks(metrics).responseSent('kas-a', CDS);
  const series = `{node="kas-a",type_url="${CDS}"}`;
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_pushes_total${series}`), 1);
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_acks_total${series}`), 0);
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_nacks_total${series}`), 0);
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_held_back_total${series}`), 0);
});

test('ACKs and NACKs are counted per sidecar and type', async () => {
  const metrics = createMetrics();
  const hooks = xdsMetricHooks(metrics);
  hooks.responseSent('kas-a', CDS);
  hooks.ack('kas-a', CDS);
  hooks.responseSent('kas-a', CDS);
  hooks.nack('kas-a', CDS);
  const series = `{node="kas-a",type_url="${CDS}"}`;
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_pushes_total${series}`), 2);
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_acks_total${series}`), 1);
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_nacks_total${series}`), 1);
});

test('an update held back past the ordering timeout is counted per sidecar and type', async () => {
  const metrics = createMetrics();
  xdsMetricHooks(metrics).heldBack('kas-a', CDS);
  const series = `{node="kas-a",type_url="${CDS}"}`;
  assert.equal(await sample(metrics.registry.metrics(), `mvproxy_xds_held_back_total${series}`), 1);
});

test('mvproxy_xds_streams counts the ADS streams open from each sidecar, 0 once it disconnects', async () => {
  const metrics = createMetrics();
  const hooks = xdsMetricHooks(metrics);
  hooks.streamOpened('kas-a');
  hooks.streamOpened('kas-b');
  hooks.streamClosed('kas-a');
  assert.equal(await sample(metrics.registry.metrics(), 'mvproxy_xds_streams{node="kas-a"}'), 0);
  assert.equal(await sample(metrics.registry.metrics(), 'mvproxy_xds_streams{node="kas-b"}'), 1);
});

test('mvproxy_apiserver_ready is 1 or 0 from the last /readyz, and absent for an apiserver not read yet', async () => {
  const metrics = createMetrics();
  recordReadiness(metrics, [{ name: 'kas-a', ready: true }, { name: 'kas-b', ready: false }, { name: 'kas-c' }]);
  const text = metrics.registry.metrics();
  assert.equal(await sample(text, 'mvproxy_apiserver_ready{apiserver="kas-a"}'), 1);
  assert.equal(await sample(text, 'mvproxy_apiserver_ready{apiserver="kas-b"}'), 0);
  assert.equal(await sample(text, 'mvproxy_apiserver_ready{apiserver="kas-c"}'), undefined);
});

test('an apiserver whose /readyz is no longer known loses its mvproxy_apiserver_ready series', async () => {
  const metrics = createMetrics();
  recordReadiness(metrics, [{ name: 'kas-a', ready: false }]);
  recordReadiness(metrics, [{ name: 'kas-a' }]);
  assert.equal(await sample(metrics.registry.metrics(), 'mvproxy_apiserver_ready{apiserver="kas-a"}'), undefined);
});

test('mvproxy_xds_in_sync is 1 for a sidecar in sync and 0 for one behind or not connected', async () => {
  const metrics = createMetrics();
  recordSidecarSync(metrics, [{ node: 'kas-a', in_sync: true }, { node: 'kas-b', in_sync: false }, { node: 'kas-c' }]);
  const text = metrics.registry.metrics();
  assert.equal(await sample(text, 'mvproxy_xds_in_sync{node="kas-a"}'), 1);
  assert.equal(await sample(text, 'mvproxy_xds_in_sync{node="kas-b"}'), 0);
  assert.equal(await sample(text, 'mvproxy_xds_in_sync{node="kas-c"}'), 0);
});

test('a sidecar no longer planned loses its mvproxy_xds_in_sync series', async () => {
  const metrics = createMetrics();
  recordSidecarSync(metrics, [
    { node: 'kas-a', in_sync: true },
    { node: 'kas-b', in_sync: true },
  ]);
  recordSidecarSync(metrics, [{ node: 'kas-a', in_sync: true }]);
  assert.equal(await sample(metrics.registry.metrics(), 'mvproxy_xds_in_sync{node="kas-b"}'), undefined);
});
