import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generatorShare, h2loadArgs, h2loadShape, parseBashTimes, parseH2loadOutput } from '../../../../src/tools/bench/h2load.js';

// A real report of h2load 1.52.0 (Debian's nghttp2-client), over HTTP/2, from
// a server that answers every tenth request 404.
const H2_REPORT = `starting benchmark...
spawning thread #0: 8 total client(s). Timing-based test with 1s of warm-up time and 2s of main duration for measurements.
Warm-up started for thread #0.
progress: 12% of clients started
progress: 100% of clients started
TLS Protocol: TLSv1.3
Cipher: TLS_AES_256_GCM_SHA384
Server Temp Key: X25519 253 bits
Application protocol: h2
Warm-up phase is over for thread #0.
Main benchmark duration is started for thread #0.
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 3.00s, 31988.00 req/s, 1.44MB/s
requests: 63976 total, 63976 started, 63976 done, 57578 succeeded, 6398 failed, 0 errored, 0 timeout
status codes: 57636 2xx, 0 3xx, 6404 4xx, 0 5xx
traffic: 2.87MB (3009672) total, 246.39KB (252304) headers (space savings 95.76%), 1.36MB (1425008) data
                     min         max         mean         sd        +/- sd
time for request:      419us     25.12ms      1.97ms      1.60ms    93.22%
time for connect:        0us         0us         0us         0us     0.00%
time to 1st byte:        0us         0us         0us         0us     0.00%
req/s           :    3936.54     4036.68     3995.11       34.68    62.50%
`;

// The same h2load when nothing listens: no connection, no protocol, zero requests.
const REFUSED_REPORT = `starting benchmark...
spawning thread #0: 1 total client(s). Timing-based test with 0s of warm-up time and 1s of main duration for measurements.
Warm-up started for thread #0.
progress: 100% of clients started
Warm-up phase is over for thread #0.
Main benchmark duration is started for thread #0.
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 1.00s, 0.00 req/s, 0B/s
requests: 0 total, 0 started, 0 done, 0 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 0 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 0B (0) total, 0B (0) headers (space savings 0.00%), 0B (0) data
                     min         max         mean         sd        +/- sd
time for request:        0us         0us         0us         0us     0.00%
`;

test('h2load report: rate, request counts, status codes, protocol, mean time', () => {
  assert.deepEqual(parseH2loadOutput(H2_REPORT), {
    requestsPerSecond: 31988,
    total: 63976,
    done: 63976,
    succeeded: 57578,
    failed: 6398,
    errored: 0,
    timeout: 0,
    statusCodes: { '2xx': 57636, '3xx': 0, '4xx': 6404, '5xx': 0 },
    applicationProtocol: 'h2',
    meanRequestMs: 1.97,
  });
});

test("h2load's CPU is shared out over every answer, warm-up included", () => {
  // 63976 requests in the main duration, 64040 answers in all.
  assert.equal(Math.round(generatorShare(parseH2loadOutput(H2_REPORT)) * 1e4), 9990);
  assert.equal(generatorShare(parseH2loadOutput(REFUSED_REPORT)), 1);
});

test('h2load report without a connection: zero requests, no protocol', () => {
  const out = parseH2loadOutput(REFUSED_REPORT);
  assert.equal(out.done, 0);
  assert.equal(out.applicationProtocol, undefined);
  assert.equal(out.meanRequestMs, 0);
});

test('h2load report of a run shorter than a second (finished in ...ms)', () => {
  // Real lines from a rerouted GET through an mvproxy sidecar (500 ms duration, 300 ms warm-up).
  const report = H2_REPORT.replace('finished in 3.00s, 31988.00 req/s, 1.44MB/s', 'finished in 806.52ms, 952.00 req/s, 547.59KB/s');
  assert.equal(parseH2loadOutput(report).requestsPerSecond, 952);
});

test('h2load output without a report is an error that shows the output', () => {
  assert.throws(() => parseH2loadOutput('--warm-up-time: value error 0.5\n'), /value error 0\.5/);
});

test("bash's times: the children's user plus system seconds", () => {
  assert.equal(parseBashTimes('0m0.002s 0m0.000s\n0m0.122s 0m0.106s\n'), 0.228);
  assert.equal(parseBashTimes('0m0.002s 0m0.000s\n1m2.500s 0m0.500s\n'), 63);
  assert.throws(() => parseBashTimes('nothing'), /unexpected output/);
});

test('in-flight requests: at most 8 HTTP/2 connections, more streams each; HTTP/1.1 one connection per request', () => {
  assert.deepEqual(h2loadShape('h2', 1), { clients: 1, streams: 1 });
  assert.deepEqual(h2loadShape('h2', 8), { clients: 8, streams: 1 });
  assert.deepEqual(h2loadShape('h2', 64), { clients: 8, streams: 8 });
  assert.deepEqual(h2loadShape('http/1.1', 64), { clients: 64, streams: 1 });
  assert.deepEqual(
    h2loadArgs({ protocol: 'http/1.1', inFlight: 8, durationMs: 1500, warmupMs: 300, headers: { accept: 'application/json' }, url: 'https://h/x' }),
    [
      '--h1',
      '--clients=8',
      '--max-concurrent-streams=1',
      '--threads=1',
      '--duration=1500ms',
      '--warm-up-time=300ms',
      '--header=accept: application/json',
      'https://h/x',
    ],
  );
});
