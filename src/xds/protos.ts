// Loads the Envoy API (proto/envoy_api.proto and what it imports) once, as a
// protobufjs root for encoding resources and serving Envoy's gRPC services,
// and, for gRPC clients (tests, benches), through proto-loader.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type protobuf from 'protobufjs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { loadProtoRoot, protoDir } from '../util/protoRoot.js';
import type { ProtoGrpcType } from '../generated/envoy_api.js';

const require = createRequire(import.meta.url);

const ENTRY = 'envoy_api.proto';

const xdsDeps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');

/** proto/ comes first: it shadows files of the older bundled API snapshot. */
const PROTO_INCLUDE_DIRS: readonly string[] = [
  protoDir(ENTRY),
  join(xdsDeps, 'envoy-api'),
  join(xdsDeps, 'xds'),
  join(xdsDeps, 'googleapis'),
  join(xdsDeps, 'protoc-gen-validate'),
];

let grpcApi: ProtoGrpcType | undefined;
let root: protobuf.Root | undefined;

/** gRPC services and client constructors, keepCase (snake_case as in Envoy's docs); loaded on first use. */
export function envoyGrpc(): ProtoGrpcType {
  if (!grpcApi) {
    const definition = protoLoader.loadSync(ENTRY, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: false,
      oneofs: true,
      json: true,
      includeDirs: [...PROTO_INCLUDE_DIRS],
    });
    grpcApi = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return grpcApi;
}

/** How messages read from the wire look: as proto-loader gives them with envoyGrpc()'s options. */
const READ_OPTIONS: protobuf.IConversionOptions = { longs: String, enums: String, defaults: false, oneofs: true, json: true };

/**
 * The server side of an Envoy gRPC service (e.g.
 * `envoy.service.discovery.v3.AggregatedDiscoveryService`), from envoyRoot():
 * the same messages envoyGrpc() gives, without loading the Envoy API a second
 * time through proto-loader (which keeps a descriptor of every message, about
 * 5 MiB of the replica's memory).
 */
export function envoyService(fullName: string): grpc.ServiceDefinition {
  const service = envoyRoot().lookupService(fullName);
  const definition: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const method of service.methodsArray) {
    method.resolve();
    const request = method.resolvedRequestType;
    const response = method.resolvedResponseType;
    if (!request || !response) throw new Error(`internal: ${fullName}.${method.name} has unresolved types`);
    definition[method.name] = {
      path: `/${fullName}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: (value: object) => Buffer.from(request.encode(request.fromObject(value)).finish()),
      requestDeserialize: (bytes: Buffer) => request.toObject(request.decode(bytes), READ_OPTIONS),
      // A response already encoded (one for many streams: servers/adsStream.ts) goes as it is.
      responseSerialize: (value: object) => (Buffer.isBuffer(value) ? value : Buffer.from(response.encode(response.fromObject(value)).finish())),
      responseDeserialize: (bytes: Buffer) => response.toObject(response.decode(bytes), READ_OPTIONS),
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
  }
  return definition;
}

/** A protobufjs root with every Envoy type mvproxy uses, for encoding and JSON. */
export function envoyRoot(): protobuf.Root {
  if (!root) {
    root = loadProtoRoot([ENTRY], PROTO_INCLUDE_DIRS);
  }
  return root;
}
