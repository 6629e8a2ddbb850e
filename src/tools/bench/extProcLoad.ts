// Load on the ext_proc server alone: how many merged-document calls (request
// and response headers, one stream each, as Envoy makes them) it answers per
// second and at what latency, over a Unix socket as the sidecars use it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveDocumentOverExtProc } from '../../entry/controlPlane.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../entry/discovery.js';
import type { ProcessingRequest } from '../../generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import { percentile } from './load.js';

export interface ExtProcLoadResult {
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** A merged document of a realistic size (the sandbox's /apis is about 20 KiB). */
const DOCUMENT = Buffer.alloc(20 * 1024, 'x');

export async function loadExtProc(concurrency: number, durationMs: number): Promise<ExtProcLoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-extproc-bench-'));
  const service = await serveDocumentOverExtProc(join(dir, 'ext_proc.sock'), DOCUMENT);
  const { client } = service;
  const metadata = service.callMetadata('bench', 'group-discovery');
  const headers = (pairs: string[][]): ProcessingRequest['request_headers'] => ({
    headers: { headers: pairs.map(([key, value]) => ({ key, raw_value: Buffer.from(value ?? '') })) },
    end_of_stream: true,
  });
  const requestHeaders: ProcessingRequest = {
    request_headers: headers([
      [':method', 'GET'],
      [':path', '/apis'],
      ['accept', AGGREGATED_DISCOVERY_JSON_ACCEPT],
    ]),
  };
  const responseHeaders: ProcessingRequest = { response_headers: headers([[':status', '200']]) };
  const responseBody: ProcessingRequest = { response_body: { body: DOCUMENT, end_of_stream: true } };
  // One stream per HTTP request, as Envoy does: request headers, response headers, then the buffered body.
  const call = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream = client.Process(metadata);
      let answers = 0;
      stream.on('data', () => {
        answers++;
        if (answers === 1) stream.write(responseHeaders);
        else if (answers === 2) stream.write(responseBody);
        else {
          stream.end();
          resolve();
        }
      });
      stream.once('error', reject);
      stream.write(requestHeaders);
    });
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await call().catch(() => errors++);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await service.close();
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const round = (n: number): number => Math.round(n * 100) / 100;
  return { callsPerSecond: Math.round(latencies.length / seconds), p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)), errors };
}
