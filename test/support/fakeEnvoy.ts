// The client half of an ADS stream as Envoy drives it, over a real grpc-js
// client: subscribe, ACK, NACK, and wait for what the server sends.
import assert from 'node:assert/strict';

import * as grpc from '@grpc/grpc-js';

import type { DiscoveryRequest } from '../../src/generated/envoy/service/discovery/v3/DiscoveryRequest.js';
import type { DiscoveryResponse__Output } from '../../src/generated/envoy/service/discovery/v3/DiscoveryResponse.js';
import type { ResourceTypeUrl } from '../../src/xds/snapshot.js';
import { envoyGrpc } from '../../src/xds/protos.js';

/** The client half of an ADS stream, as Envoy would drive it. */
export class FakeEnvoy {
  readonly received: DiscoveryResponse__Output[] = [];
  error: grpc.ServiceError | undefined;
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse__Output>;
  private readonly queue: DiscoveryResponse__Output[] = [];
  private wake: (() => void) | undefined;
  private first = true;

  /** node null: send no node at all. */
  constructor(
    address: string,
    readonly node: string | null,
  ) {
    const Client = envoyGrpc().envoy.service.discovery.v3.AggregatedDiscoveryService;
    const client = new Client(address, grpc.credentials.createInsecure());
    this.client = client;
    this.call = client.StreamAggregatedResources();
    this.call.on('data', (response: DiscoveryResponse__Output) => {
      this.received.push(response);
      this.queue.push(response);
      this.wake?.();
    });
    this.call.on('error', (err: grpc.ServiceError) => {
      this.error = err;
      this.wake?.();
    });
  }

  send(request: DiscoveryRequest): void {
    // Like Envoy with set_node_on_first_message_only.
    const withNode = this.first && this.node !== null ? { ...request, node: { id: this.node } } : request;
    this.first = false;
    this.call.write(withNode);
  }

  subscribe(typeUrl: ResourceTypeUrl, names: string[] = [], versionInfo = ''): void {
    this.send({ type_url: typeUrl, resource_names: names, version_info: versionInfo });
  }

  ack(response: DiscoveryResponse__Output, names: string[] = []): void {
    this.send({ type_url: response.type_url, version_info: response.version_info, response_nonce: response.nonce, resource_names: names });
  }

  nack(response: DiscoveryResponse__Output, message: string, keptVersion = '', names: string[] = []): void {
    this.send({
      type_url: response.type_url,
      version_info: keptVersion,
      response_nonce: response.nonce,
      resource_names: names,
      error_detail: { code: 3, message },
    });
  }

  async next(timeoutMs = 3000): Promise<DiscoveryResponse__Output> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.error) throw this.error;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no DiscoveryResponse within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.queue.shift() as NonNullable<ReturnType<typeof this.queue.shift>>;
  }

  /** Asserts that nothing arrives for a while. */
  async nothingFor(ms = 300): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    assert.deepEqual(
      this.queue.map((r) => `${r.type_url} ${r.version_info}`),
      [],
      'expected no DiscoveryResponse',
    );
  }

  async failure(timeoutMs = 3000): Promise<grpc.ServiceError> {
    const deadline = Date.now() + timeoutMs;
    while (!this.error && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    if (!this.error) throw new Error('stream did not fail');
    return this.error;
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}
