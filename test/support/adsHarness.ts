// An ADS server on a Unix socket for unit tests, with fake Envoys to drive it.
import type { TestContext } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AdsServer, type AdsMetrics, type AdsServerOptions } from '../../src/servers/ads.js';
import { SnapshotStore } from '../../src/servers/snapshotStore.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import type { DiscoveryResponse__Output } from '../../src/generated/envoy/service/discovery/v3/DiscoveryResponse.js';
import { FakeEnvoy } from './fakeEnvoy.js';

export const NODE = 'apiserver-a';

export interface Harness {
  ads: AdsServer;
  address: string;
  path: string;
  sent: Array<{ typeUrl: string; version: string }>;
  nacks: number;
  /** Types held back past the ordering timeout (AdsMetrics.heldBack). */
  heldBack: string[];
  envoy(node?: string): FakeEnvoy;
}

export async function harness(t: TestContext, options: Pick<AdsServerOptions, 'orderingTimeoutMs' | 'maxBytesInFlight' | 'awaitSync'> = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-ads-'));
  const sent: Harness['sent'] = [];
  const h = { nacks: 0 } as { nacks: number };
  const heldBack: string[] = [];
  const metrics: AdsMetrics = {
    responseSent: (_node, typeUrl, version) => sent.push({ typeUrl, version }),
    nack: () => {
      h.nacks++;
    },
    heldBack: (_node, typeUrl) => heldBack.push(typeUrl),
  };
  const ads = new AdsServer({ current: new SnapshotStore(), startup: new SnapshotStore() }, { logger: pino({ level: 'silent' }), metrics, ...options });
  const server = createGrpcServer();
  ads.addToServer(server);
  const path = join(dir, 'xds.sock');
  const address = await listenUnix(server, path);
  const clients: FakeEnvoy[] = [];
  t.after(async () => {
    for (const c of clients) c.close();
    await shutdownGrpcServer(server, 100);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    ads,
    address,
    path,
    sent,
    heldBack,
    get nacks() {
      return h.nacks;
    },
    envoy(node?: string) {
      const c = new FakeEnvoy(address, node ?? NODE);
      clients.push(c);
      return c;
    },
  };
}

/** The names of the resources of a response. */
export function names(response: DiscoveryResponse__Output): string[] {
  return (response.resources ?? []).map((r) => {
    const fields = r as unknown as { name?: string; cluster_name?: string };
    return fields.name ?? fields.cluster_name ?? '?';
  });
}
