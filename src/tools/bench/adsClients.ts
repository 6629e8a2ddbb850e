// Simulated Envoy ADS clients, for fan-out figures (bench/fanout.ts) and the
// fan-out test: each opens one state-of-the-world ADS stream as Envoy does,
// names its node on the first request, subscribes to every type mvproxy
// serves (all names), and ACKs each response at once with its version and
// nonce. No Envoy behind it: it applies nothing, it only answers and keeps,
// per type, the last version it ACKed and when (performance.now()).
import * as grpc from '@grpc/grpc-js';
import { envoyMessageCodec, NODE_APISERVER_KEY } from '../../entry/sidecar.js';
import type { DiscoveryRequest } from '../../generated/envoy/service/discovery/v3/DiscoveryRequest.js';
import type { DiscoveryResponse__Output } from '../../generated/envoy/service/discovery/v3/DiscoveryResponse.js';
import type { Node } from '../../generated/envoy/config/core/v3/Node.js';
import { isXdsTypeUrl, XDS_PUSH_ORDER, type XdsTypeUrl } from './xdsTypes.js';

const STREAM_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** What a simulated Envoy reads of a response: not its resources, but the size of the whole message. */
type ResponseHead = Pick<DiscoveryResponse__Output, 'version_info' | 'nonce' | 'type_url'> & { bytes: number };

/**
 * The wire codecs. A response's resources stay undecoded bytes (protobufjs
 * decodes an Any to its type URL and value): decoding hundreds of clusters
 * into objects per response would make the simulated nodes, not the control
 * plane, the bottleneck (a real Envoy decodes in C++).
 */
function codecs(): { serialize: (r: DiscoveryRequest) => Buffer; deserialize: (b: Buffer) => ResponseHead } {
  const request = envoyMessageCodec('envoy.service.discovery.v3.DiscoveryRequest');
  const response = envoyMessageCodec('envoy.service.discovery.v3.DiscoveryResponse');
  return {
    serialize: (r) => request.encode(r),
    deserialize: (bytes) => {
      const head = response.decode(bytes);
      const text = (key: string): string => {
        const value = head[key];
        return typeof value === 'string' ? value : '';
      };
      return { version_info: text('version_info'), nonce: text('nonce'), type_url: text('type_url'), bytes: bytes.length };
    },
  };
}

export interface AckRecord {
  version: string;
  /** performance.now() when the ACK was written. */
  at: number;
}

export interface SimulatedEnvoyOptions {
  credentials?: grpc.ChannelCredentials;
  /** The apiserver whose sidecar config it runs (node.metadata `apiserver`); by default the one its node id names. */
  sidecar?: string;
  /**
   * On a failed stream, open a new one 0.1 s later (as the sandbox's sidecars
   * do), naming the versions it runs, and count it in `reconnects`; by
   * default a failure is final and kept in `error`.
   */
  reconnect?: boolean;
}

/** One simulated Envoy: one channel, one ADS stream at a time. */
export class SimulatedEnvoy {
  /** Per type, the last version ACKed. */
  readonly acked = new Map<XdsTypeUrl, AckRecord>();
  /** Responses received (each was ACKed). */
  responses = 0;
  /** Per type, the largest response message received, bytes. */
  readonly largestResponseBytes = new Map<XdsTypeUrl, number>();
  /** Streams that failed and were opened again (with `reconnect`). */
  reconnects = 0;
  /** Why the stream failed (without `reconnect`), or why it last failed (with it). */
  error: grpc.ServiceError | undefined;
  private readonly client: grpc.Client;
  private call: grpc.ClientDuplexStream<DiscoveryRequest, ResponseHead>;
  private readonly listeners = new Set<() => void>();
  private readonly codecs = codecs();
  private closed = false;

  /** The apiserver whose sidecar config it runs, when not the one its node id names. */
  readonly sidecar: string | undefined;

  /** `address`: a grpc-js target, e.g. `unix:///run/mvproxy/xds.sock`. */
  constructor(
    address: string,
    readonly node: string,
    private readonly options: SimulatedEnvoyOptions = {},
  ) {
    this.sidecar = options.sidecar;
    // Its own connection, as each Envoy has (grpc-js would otherwise share one among all clients of a target).
    this.client = new grpc.Client(address, options.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.max_receive_message_length': -1,
    });
    this.call = this.open();
  }

  /** True while the stream has failed and will not be opened again. */
  get failed(): boolean {
    return this.error !== undefined && !this.options.reconnect;
  }

  private open(): grpc.ClientDuplexStream<DiscoveryRequest, ResponseHead> {
    const call = this.client.makeBidiStreamRequest(STREAM_PATH, this.codecs.serialize, this.codecs.deserialize);
    call.on('data', (response: ResponseHead) => this.onResponse(call, response));
    call.on('error', (err: grpc.ServiceError) => {
      this.error = err;
      if (this.options.reconnect && !this.closed) {
        setTimeout(() => {
          if (this.closed) return;
          this.reconnects++;
          this.call = this.open();
        }, 100);
      }
      this.notify();
    });
    // Like Envoy with set_node_on_first_message_only: the node goes on the first request only;
    // a new stream names the versions this node runs.
    XDS_PUSH_ORDER.forEach((url, i) => {
      call.write({ type_url: url, resource_names: [], version_info: this.acked.get(url)?.version ?? '', ...(i === 0 ? { node: this.nodeMessage() } : {}) });
    });
    return call;
  }

  private nodeMessage(): Node {
    const { sidecar } = this;
    return { id: this.node, ...(sidecar === undefined ? {} : { metadata: { fields: { [NODE_APISERVER_KEY]: { stringValue: sidecar } } } }) };
  }

  /** Calls `listener` after every response (and on a stream error); returns a function that removes it. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    this.call.cancel();
    this.client.close();
  }

  private onResponse(call: grpc.ClientDuplexStream<DiscoveryRequest, ResponseHead>, response: ResponseHead): void {
    const url = response.type_url ?? '';
    const version = response.version_info ?? '';
    call.write({ type_url: url, version_info: version, response_nonce: response.nonce ?? '', resource_names: [] });
    this.responses++;
    if (isXdsTypeUrl(url)) {
      this.acked.set(url, { version, at: performance.now() });
      this.largestResponseBytes.set(url, Math.max(response.bytes, this.largestResponseBytes.get(url) ?? 0));
    }
    this.notify();
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}

/**
 * Opens `nodes.length` simulated Envoys against one address; with `sidecars`,
 * they run those sidecars' configs in turn (node i runs sidecars[i % n]).
 */
export function connectSimulatedEnvoys(
  address: string,
  nodes: readonly string[],
  options: Omit<SimulatedEnvoyOptions, 'sidecar'> & { sidecars?: readonly string[] } = {},
): SimulatedEnvoy[] {
  const { sidecars, ...common } = options;
  return nodes.map((node, i) => {
    const sidecar = sidecars?.length ? sidecars[i % sidecars.length] : undefined;
    return new SimulatedEnvoy(address, node, { ...common, ...(sidecar === undefined ? {} : { sidecar }) });
  });
}

/**
 * Resolves once `done()` holds for every client, checked after each of its
 * responses; rejects when a stream fails, or after `timeoutMs` with the nodes
 * still waiting (a bound on a hung test, not a figure).
 */
export function waitForEvery(clients: readonly SimulatedEnvoy[], done: (client: SimulatedEnvoy) => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const waiting = new Set(clients.filter((c) => !done(c)));
    const removers: Array<() => void> = [];
    const finish = (err?: Error): void => {
      clearTimeout(timer);
      for (const remove of removers) remove();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => {
      const names = [...waiting].map((c) => c.node);
      finish(new Error(`${names.length} simulated nodes still waiting after ${timeoutMs} ms: ${names.slice(0, 10).join(', ')}`));
    }, timeoutMs);
    if (waiting.size === 0) return finish();
    for (const client of waiting) {
      removers.push(
        client.onChange(() => {
          if (client.failed) return finish(new Error(`simulated node ${client.node}: ADS stream failed: ${client.error?.message}`));
          if (!done(client)) return;
          waiting.delete(client);
          if (waiting.size === 0) finish();
        }),
      );
    }
  });
}
