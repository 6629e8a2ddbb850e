// The large-cluster watch bench's pure parts: the selective watch path, the
// event reader that stamps delays, and the summary's ratios to the floor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventReader, SENT_ANNOTATION, watchPath } from '../../../../src/tools/bench/watchClients.js';
import { type SideFigures, watchScaleSummary } from '../../../../src/tools/bench/watchScale.js';

const side = (f: Partial<SideFigures>): SideFigures => ({
  connections: 2000,
  watches: 10000,
  writes: 2400,
  eventsExpected: 12000,
  eventsReceived: 12000,
  delayMs: { p50: 10, p99: 40, max: 90 },
  machineBusyShare: 0.4,
  clientCores: 0.3,
  watchFailures: [],
  failed: 0,
  ...f,
});

describe('watch-scale bench', () => {
  it('watches only the pods bound to the node, from a resourceVersion on, as a kubelet does', () => {
    assert.equal(
      watchPath('ns', 'node-7', '42'),
      '/api/v1/namespaces/ns/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-7&resourceVersion=42&allowWatchBookmarks=false',
    );
  });

  it('reads events split across chunks, one call per complete line, with the object annotations', () => {
    const seen: Array<string | undefined> = [];
    const read = eventReader((annotations) => seen.push(annotations?.[SENT_ANNOTATION]));
    const event = JSON.stringify({ type: 'MODIFIED', object: { metadata: { annotations: { [SENT_ANNOTATION]: '1000' } } } });
    read(`${event.slice(0, 10)}`);
    assert.deepEqual(seen, []);
    read(`${event.slice(10)}\n${JSON.stringify({ type: 'MODIFIED', object: { metadata: {} } })}\n`);
    assert.deepEqual(seen, ['1000', undefined]);
  });

  it('the summary gives the sidecar over the minimal Envoy (memory, delay, CPU) and over direct (delay)', () => {
    const summary = watchScaleSummary({
      direct: side({ delayMs: { p50: 8, p99: 20, max: 50 } }),
      minimal: side({ memoryPerConnectionKb: 40, memoryPerExtraWatchKb: 10, proxyCpuUsPerEvent: 50 }),
      sidecar: side({ memoryPerConnectionKb: 44, memoryPerExtraWatchKb: 10, proxyCpuUsPerEvent: 60, delayMs: { p50: 11, p99: 44, max: 99 } }),
    });
    assert.equal(summary['watch_scale_memory_per_connection_vs_minimal_envoy'], 1.1);
    assert.equal(summary['watch_scale_memory_per_extra_watch_vs_minimal_envoy'], 1);
    assert.equal(summary['watch_scale_delay_p50_vs_minimal_envoy'], 1.1);
    assert.equal(summary['watch_scale_delay_p99_vs_direct'], 2.2);
    assert.equal(summary['watch_scale_cpu_per_event_vs_minimal_envoy'], 1.2);
    assert.equal(summary['watch_scale_watches'], 10000);
    assert.equal('watch_scale_direct_memory_per_connection_kb' in summary, false, 'direct has no proxy: no memory figure, not a zero');
  });
});
