// Loads the Envoy API (proto/envoy_api.proto and what it imports) once, both
// as gRPC service definitions and as a protobufjs root for encoding resources.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProtoGrpcType } from '../generated/envoy_api.js';

const require = createRequire(import.meta.url);

/** The repository root, from src/xds (ts sources) or dist/src/xds (compiled). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'proto', 'envoy_api.proto'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find proto/envoy_api.proto above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}

const xdsDeps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');

/** proto/ comes first: it shadows files of the older bundled API snapshot. */
export const PROTO_INCLUDE_DIRS: readonly string[] = [
  join(repoRoot(), 'proto'),
  join(xdsDeps, 'envoy-api'),
  join(xdsDeps, 'xds'),
  join(xdsDeps, 'googleapis'),
  join(xdsDeps, 'protoc-gen-validate'),
];

const ENTRY = 'envoy_api.proto';

let grpcApi: ProtoGrpcType | undefined;
let root: protobuf.Root | undefined;

/** gRPC services and message constructors, keepCase (snake_case as in Envoy's docs). */
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

/** A protobufjs root with every Envoy type mvproxy uses, for encoding and JSON. */
export function envoyRoot(): protobuf.Root {
  if (!root) {
    const r = new protobuf.Root();
    r.resolvePath = (_origin: string, target: string): string => {
      if (target.startsWith('/')) return target;
      for (const dir of PROTO_INCLUDE_DIRS) {
        const candidate = resolve(dir, target);
        if (existsSync(candidate)) return candidate;
      }
      return target;
    };
    r.loadSync(ENTRY, { keepCase: true });
    r.resolveAll();
    root = r;
  }
  return root;
}

/** Envoy's type URL for a fully qualified message name. */
export function typeUrl(messageName: string): string {
  return `type.googleapis.com/${messageName}`;
}
