// Load on the ext_proc server alone: how many identity calls per second it
// answers and at what latency, over a Unix socket as the sidecars use it.
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createMetrics } from '../metrics.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../servers/ads.js';
import { ExtProcServer } from '../servers/extProc.js';
import { EXT_PROC_NODE_METADATA } from '../translator/names.js';
import { envoyGrpc } from '../xds/protos.js';
import { formatXfcc } from '../identity/xfcc.js';
import type { ProcessingRequest } from '../generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import { percentile } from './load.js';

export interface ExtProcLoadResult {
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export async function loadExtProc(clientCertPem: string, concurrency: number, durationMs: number): Promise<ExtProcLoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-extproc-bench-'));
  const server = createGrpcServer();
  new ExtProcServer({ logger: pino({ level: 'silent' }), metrics: createMetrics() }).addToServer(server);
  const address = await listenUnix(server, join(dir, 'ext_proc.sock'));
  const Client = envoyGrpc().envoy.service.ext_proc.v3.ExternalProcessor;
  const client = new Client(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set(EXT_PROC_NODE_METADATA, 'bench');
  const request: ProcessingRequest = {
    request_headers: {
      headers: {
        headers: [
          [':method', 'GET'],
          [':path', '/api/v1/namespaces/default/configmaps/bench'],
          [':authority', 'apiserver'],
          ['x-forwarded-client-cert', formatXfcc(clientCertPem)],
        ].map(([key, value]) => ({ key, raw_value: Buffer.from(value ?? '') })),
      },
      end_of_stream: true,
    },
  };
  // One stream per HTTP request, as Envoy does.
  const call = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream = client.Process(metadata);
      stream.once('data', () => {
        stream.end();
        resolve();
      });
      stream.once('error', reject);
      stream.write(request);
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
  client.close();
  await shutdownGrpcServer(server, 100);
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const round = (n: number): number => Math.round(n * 100) / 100;
  return { callsPerSecond: Math.round(latencies.length / seconds), p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)), errors };
}
