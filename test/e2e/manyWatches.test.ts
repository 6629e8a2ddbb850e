// 1,000 concurrent watches through one sidecar, on the sandbox (a real
// kube-apiserver, its Envoy sidecar, the control plane): a token client opens
// them over HTTP/2 (as informers share connections), every watch gets every
// event, a GET through the same sidecar stays fast meanwhile, nothing
// crashes, and Envoy's and the control plane's memory come back near their
// level once the watches are closed.
import { envoyAdminJson } from '../support/envoyAdmin.js';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { Agent, request } from 'node:https';
import { after, before, describe, test } from 'node:test';

import type { SandboxState } from '../../src/tools/sandbox/state.js';
import { MiB, mib, processFootprint } from '../support/portAbuse.js';
import { apiserverNamed, eventually, startTestSandbox, type TestSandbox } from '../support/sandbox.js';

const NAMESPACE = 'many-watches';
const WATCHES = 1000;
/**
 * The sidecar, like kube-apiserver, allows a client 100 concurrent streams per
 * HTTP/2 connection (a client past it waits for a free stream): 50 watches on
 * each of 20 connections, as a few informer processes would hold them.
 */
const SESSIONS = 20;
const EVENTS = 5;

describe('1,000 concurrent watches through one sidecar', { timeout: 115_000 }, () => {
  let tb: TestSandbox;
  let state: SandboxState;
  let sidecar: string;
  let sidecarAdminSocket: string;
  let token: string;
  let ca: Buffer;

  before(async () => {
    tb = await startTestSandbox([{ name: 'kas-a', version: 'v1.36.3' }]);
    state = tb.state();
    const kasA = apiserverNamed(state, 'kas-a');
    sidecar = kasA.sidecar ?? '';
    sidecarAdminSocket = kasA.sidecarAdminSocket ?? '';
    assert.ok(sidecar && sidecarAdminSocket, 'the sandbox runs a sidecar with an admin endpoint');
    token = tb.sandbox.adminBearerToken();
    ca = readFileSync(state.ca);
  });

  /** A keep-alive HTTP/1.1 client of the sidecar (a separate client from the watcher). */
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });

  after(async () => {
    agent.destroy();
    await tb?.sandbox.down();
  });
  function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        `${sidecar}${path}`,
        {
          method,
          ca,
          agent,
          timeout: 10_000,
          headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
      req.on('error', reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });
  }

  /** Latencies (ms) of `n` GETs of one configmap list page through the sidecar, one at a time. */
  async function getLatencies(n: number): Promise<number[]> {
    const took: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      const res = await call('GET', `/api/v1/namespaces/${NAMESPACE}/configmaps?limit=1`);
      took.push(performance.now() - started);
      assert.equal(res.status, 200, res.body);
    }
    return took.sort((a, b) => a - b);
  }

  /** Envoy's heap as its allocator counts it (admin /memory), and its resident memory. */
  async function envoyMemory(): Promise<{ allocatedBytes: number; rssBytes: number }> {
    const memory = await envoyAdminJson<{ allocated: string }>(sidecarAdminSocket, '/memory');
    const pid = tb.sandbox.sidecarPid('kas-a');
    assert.ok(pid !== undefined);
    return { allocatedBytes: Number(memory.allocated), rssBytes: processFootprint(pid).rssBytes };
  }

  /** Requests in flight on the sidecar's apiserver listener. */
  async function envoyActiveRequests(): Promise<number> {
    const stats = await envoyAdminJson<{ stats: Array<{ name: string; value: number }> }>(
      sidecarAdminSocket,
      '/stats?format=json&filter=^http\\.apiserver\\.downstream_rq_active$',
    );
    return stats.stats[0]?.value ?? Number.NaN;
  }

  /** Nonzero Envoy counters that say why a request got no answer from the apiserver (for a failure message). */
  async function envoyTroubleCounters(): Promise<string> {
    const stats = await envoyAdminJson<{ stats: Array<{ name: string; value: number }> }>(
      sidecarAdminSocket,
      '/stats?format=json&filter=(reset|overflow|refused|protocol_error|5xx|503|no_healthy|cx_connect_fail|cx_destroy|wasm|ext_proc|ejections_active)',
    );
    return stats.stats
      .filter((stat) => typeof stat.value === 'number' && stat.value > 0)
      .map((stat) => `${stat.name}=${stat.value}`)
      .join(' ');
  }

  /** The control plane's resident memory and heap, from its /metrics. */
  async function controlPlaneMemory(): Promise<{ rssBytes: number; heapUsedBytes: number }> {
    const text = await (await fetch(`${state.controlPlane?.admin}/metrics`)).text();
    const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    return { rssBytes: read('process_resident_memory_bytes'), heapUsedBytes: read('nodejs_heap_size_used_bytes') };
  }

  interface OpenWatch {
    stream: ClientHttp2Stream;
    status: Promise<number>;
    names: Set<string>;
    ended: boolean;
    /** Of an answer other than 200: who answered and what it said, for the failure message. */
    refusal?: string;
    /** Seconds the answerer asked to wait before trying again (a 429's Retry-After). */
    retryAfterSeconds?: number;
    /** A 429 from the apiserver's priority and fairness (apfRejection), not from anything between. */
    apfRejected: boolean;
  }

  /**
   * kube-apiserver's priority and fairness refusing a request: 429 with a
   * Retry-After and the UIDs of the flow schema and priority level it
   * classified the request into (k8s.io/apiserver, filters/priority-and-fairness.go:
   * setResponseHeaders, then tooManyRequests). Envoy's own 429s (overload
   * manager, rate limits, a direct response) carry no X-Kubernetes-PF-* header.
   */
  function apfRejection(headers: IncomingHttpHeaders): boolean {
    return (
      Number(headers[':status']) === 429 &&
      /^\d+$/.test(String(headers['retry-after'] ?? '')) &&
      Boolean(headers['x-kubernetes-pf-flowschema-uid']) &&
      Boolean(headers['x-kubernetes-pf-prioritylevel-uid'])
    );
  }

  function openWatch(session: ClientHttp2Session, resourceVersion: string): OpenWatch {
    const stream = session.request({
      ':method': 'GET',
      ':path': `/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&resourceVersion=${resourceVersion}`,
      authorization: `Bearer ${token}`,
      accept: 'application/json',
    });
    const watch: OpenWatch = { stream, status: Promise.resolve(0), names: new Set(), ended: false, apfRejected: false };
    watch.status = new Promise((resolve) => {
      stream.on('response', (headers) => {
        const status = Number(headers[':status']);
        if (status !== 200) watch.refusal = `${status} from ${String(headers.server ?? 'the sidecar')}`;
        if (headers['retry-after'] !== undefined) watch.retryAfterSeconds = Number(headers['retry-after']);
        watch.apfRejected = apfRejection(headers);
        if (status === 429 && !watch.apfRejected) watch.refusal += ` without priority and fairness's marks (${JSON.stringify(headers)})`;
        resolve(status);
      });
      stream.on('error', () => resolve(-1));
      stream.on('close', () => resolve(-1));
    });
    let buffered = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      if (watch.refusal !== undefined) {
        watch.refusal += `: ${chunk.slice(0, 300)}`;
        return;
      }
      buffered += chunk;
      for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
        const event = JSON.parse(buffered.slice(0, newline)) as { type: string; object: { metadata?: { name?: string } } };
        buffered = buffered.slice(newline + 1);
        if (event.type === 'ADDED' && event.object.metadata?.name) watch.names.add(event.object.metadata.name);
      }
    });
    stream.on('close', () => {
      watch.ended = true;
    });
    stream.on('error', () => undefined);
    return watch;
  }

  /**
   * A watch as client-go's reflector opens one: a 429 from the apiserver's
   * priority and fairness (1,000 watches initializing at once outrun its seats,
   * with or without a proxy) is tried again after its Retry-After. Any other
   * answer, a 429 the sidecar made included, is the watch's and fails the test.
   */
  async function openAdmittedWatch(session: ClientHttp2Session, resourceVersion: string, retried: { count: number }): Promise<OpenWatch> {
    for (let attempt = 0; ; attempt++) {
      const watch = openWatch(session, resourceVersion);
      if ((await watch.status) !== 429 || !watch.apfRejected || attempt === 5) return watch;
      retried.count++;
      await new Promise((resolve) => setTimeout(resolve, 1000 * Math.min(watch.retryAfterSeconds ?? 1, 5)));
    }
  }

  test('every watch gets every event, a GET stays fast meanwhile, and memory comes back when they close', async (t) => {
    // A freshly started apiserver may refuse watches (503) while its watch cache
    // initializes, with or without a proxy: begin once it takes one.
    await eventually(async () => assert.equal((await call('GET', '/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1')).status, 200), 30_000);
    assert.equal((await call('POST', '/api/v1/namespaces', { metadata: { name: NAMESPACE } })).status, 201);
    const listed = JSON.parse((await call('GET', `/api/v1/namespaces/${NAMESPACE}/configmaps`)).body) as { metadata: { resourceVersion: string } };
    const resourceVersion = listed.metadata.resourceVersion;

    // Before: a warm sidecar (a first round of watches opened and closed), then measured.
    const warmSession = connect(sidecar, { ca });
    const warm = Array.from({ length: 50 }, () => openWatch(warmSession, resourceVersion));
    await Promise.all(warm.map((w) => w.status));
    warmSession.destroy();
    for (let i = 0; i < 40 && (await envoyActiveRequests()) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 250));
    const getsBefore = await getLatencies(20);
    const envoyBefore = await envoyMemory();
    const controlPlaneBefore = await controlPlaneMemory();

    // 1,000 watches over a few HTTP/2 connections.
    const sessions = Array.from({ length: SESSIONS }, () => connect(sidecar, { ca }));
    for (const session of sessions) session.on('error', () => undefined);
    const opening = performance.now();
    const retried = { count: 0 };
    const watches = await Promise.all(
      Array.from({ length: WATCHES }, (_, i) => openAdmittedWatch(sessions[i % SESSIONS] as ClientHttp2Session, resourceVersion, retried)),
    );
    const statuses = await Promise.all(watches.map((w) => w.status));
    const openedInMs = performance.now() - opening;
    const notOk = statuses.filter((s) => s !== 200);
    if (notOk.length > 0) await new Promise((resolve) => setTimeout(resolve, 500)); // their bodies
    const refusals = [...new Set(watches.flatMap((w) => (w.refusal === undefined ? [] : [w.refusal])))];
    assert.equal(
      notOk.length,
      0,
      `watches not answered 200: ${JSON.stringify(notOk.slice(0, 10))}; ${refusals.slice(0, 3).join(' | ')}; sidecar counters: ${notOk.length > 0 ? await envoyTroubleCounters() : ''}`,
    );
    assert.ok((await envoyActiveRequests()) >= WATCHES, 'the sidecar holds them all');

    // Meanwhile, a GET through the same sidecar stays fast.
    const getsDuring = await getLatencies(20);
    const p50 = (xs: number[]): number => xs[Math.floor(xs.length / 2)] ?? Number.NaN;
    const max = (xs: number[]): number => xs.at(-1) ?? Number.NaN;
    assert.ok(max(getsDuring) < 1000, `slowest GET while ${WATCHES} watches are open: ${max(getsDuring).toFixed(0)} ms`);
    assert.ok(p50(getsDuring) < Math.max(50, 5 * p50(getsBefore)), `GET p50 ${p50(getsDuring).toFixed(1)} ms, before ${p50(getsBefore).toFixed(1)} ms`);

    // Every watch gets every event.
    const names = Array.from({ length: EVENTS }, (_, i) => `mw-${i}`);
    for (const name of names) assert.equal((await call('POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, { metadata: { name } })).status, 201);
    const deadline = Date.now() + 30_000;
    const complete = (): number => watches.filter((w) => names.every((n) => w.names.has(n))).length;
    while (complete() < WATCHES && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(complete(), WATCHES, `watches that saw all ${EVENTS} creations`);
    assert.equal(watches.filter((w) => w.ended).length, 0, 'no watch ended');
    const envoyDuring = await envoyMemory();
    const controlPlaneDuring = await controlPlaneMemory();

    // Close them all; the sidecar lets go of every one.
    for (const session of sessions) session.destroy();
    for (let i = 0; i < 40 && (await envoyActiveRequests()) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 250));
    assert.equal(await envoyActiveRequests(), 0, 'no request left on the sidecar');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const envoyAfter = await envoyMemory();
    const controlPlaneAfter = await controlPlaneMemory();
    const getsAfter = await getLatencies(10);
    assert.equal(tb.sandbox.sidecarPid('kas-a') !== undefined, true);

    t.diagnostic(
      `${WATCHES} watches on ${SESSIONS} HTTP/2 connections opened in ${openedInMs.toFixed(0)} ms (${retried.count} retried after the apiserver's 429); ` +
        `GET p50/max ${p50(getsBefore).toFixed(1)}/${max(getsBefore).toFixed(0)} ms before, ${p50(getsDuring).toFixed(1)}/${max(getsDuring).toFixed(0)} ms during, ${p50(getsAfter).toFixed(1)}/${max(getsAfter).toFixed(0)} ms after; ` +
        `Envoy allocated ${mib(envoyBefore.allocatedBytes)} -> ${mib(envoyDuring.allocatedBytes)} -> ${mib(envoyAfter.allocatedBytes)} MiB, ` +
        `rss ${mib(envoyBefore.rssBytes)} -> ${mib(envoyDuring.rssBytes)} -> ${mib(envoyAfter.rssBytes)} MiB; ` +
        `control plane rss ${mib(controlPlaneBefore.rssBytes)} -> ${mib(controlPlaneDuring.rssBytes)} -> ${mib(controlPlaneAfter.rssBytes)} MiB, ` +
        `heap ${mib(controlPlaneBefore.heapUsedBytes)} -> ${mib(controlPlaneDuring.heapUsedBytes)} -> ${mib(controlPlaneAfter.heapUsedBytes)} MiB`,
    );
    // Envoy's allocator gives back what the streams held.
    assert.ok(
      envoyAfter.allocatedBytes <= envoyBefore.allocatedBytes + 8 * MiB,
      `Envoy allocated back near ${mib(envoyBefore.allocatedBytes)} MiB: ${mib(envoyAfter.allocatedBytes)} MiB`,
    );
    // Watches never reach the control plane: its memory does not follow them.
    assert.ok(
      controlPlaneAfter.rssBytes <= controlPlaneBefore.rssBytes + 32 * MiB,
      `control plane rss near ${mib(controlPlaneBefore.rssBytes)} MiB: ${mib(controlPlaneAfter.rssBytes)} MiB`,
    );
  });
});
