// A small proxy-wasm ABI 0.2.1 host in Node, enough to run an HTTP filter
// module the way Envoy does (github.com/proxy-wasm/spec, abi-versions/v0.2.1):
// one VM, plugin (root) contexts configured from a string or bytes, each
// with its root_id (the property plugin_root_id), and one stream context per
// request that sees proxy_on_request_headers and, if driven, the response
// headers (proxy_on_response_headers) and body chunks (proxy_on_response_body,
// with the chunk as the response body buffer, replaced as Envoy's
// proxy_set_buffer_bytes does; the response headers stay modifiable until
// the stream closes). Several plugin contexts (as after an
// Envoy configuration update, while older streams finish, or several
// plugins sharing one VM) and concurrent streams can be driven step by step.
//
// Header maps behave like Envoy's: names are matched case-insensitively and
// added/replaced under their lowercased name; removing a name removes every
// value. Buffers handed to the module are allocated with its
// proxy_on_memory_allocate, as Envoy does. The clock is injectable.
// Metrics (proxy_define_metric and friends) are kept per VM by name, as
// Envoy's stats; tests read them with `metric(name)`.
import { readFileSync } from 'node:fs';

import { deserializeHeaderMap, serializeHeaderMap } from './headerMaps.js';

export type HeaderList = Array<[string, string]>;

export interface LocalResponse {
  status: number;
  details: string;
  body: string;
  headers: HeaderList;
  grpcStatus: number;
}

export interface RequestResult {
  action: 'continue' | 'pause';
  /** The request headers (or, for sendResponseHeaders, the response headers) after the filter ran, in order. */
  headers: HeaderList;
  localResponse?: LocalResponse;
  /** The local response's body as bytes (`localResponse.body` is it decoded as UTF-8). */
  localResponseBody?: Buffer;
}

/** What a filter did with the response headers. */
export type ResponseResult = RequestResult;

export interface LogEntry {
  level: number;
  message: string;
}

const LOG_LEVEL = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, critical: 5 } as const;

const STATUS_OK = 0;
const STATUS_NOT_FOUND = 1;
const STATUS_BAD_ARGUMENT = 2;
const BUFFER_HTTP_RESPONSE_BODY = 1;
const BUFFER_PLUGIN_CONFIGURATION = 7;
const MAP_HTTP_REQUEST_HEADERS = 0;
const MAP_HTTP_RESPONSE_HEADERS = 2;
const METRIC_COUNTER = 0;
const METRIC_HISTOGRAM = 2;

interface FilterExports {
  memory: WebAssembly.Memory;
  _initialize?: () => void;
  _start?: () => void;
  proxy_on_memory_allocate: (size: number) => number;
  proxy_on_vm_start: (rootContextId: number, size: number) => number;
  proxy_on_context_create: (contextId: number, parentContextId: number) => void;
  proxy_on_configure: (rootContextId: number, size: number) => number;
  proxy_on_request_headers: (contextId: number, numHeaders: number, endOfStream: number) => number;
  proxy_on_response_headers?: (contextId: number, numHeaders: number, endOfStream: number) => number;
  proxy_on_response_body?: (contextId: number, bodySize: number, endOfStream: number) => number;
  proxy_on_done: (contextId: number) => number;
  proxy_on_log: (contextId: number) => void;
  proxy_on_delete: (contextId: number) => void;
}

const REQUIRED_EXPORTS = [
  'memory',
  'proxy_abi_version_0_2_1',
  'proxy_on_memory_allocate',
  'proxy_on_vm_start',
  'proxy_on_context_create',
  'proxy_on_configure',
  'proxy_on_request_headers',
  'proxy_on_done',
  'proxy_on_log',
  'proxy_on_delete',
];

const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

export interface HostOptions {
  /** The plugin configuration (google.protobuf.StringValue, or BytesValue's bytes, in Envoy); default empty. */
  configuration?: string | Uint8Array;
  /** The plugin's root_id (property plugin_root_id) for every plugin context unless given; default empty. */
  rootId?: string;
  /** Current time in nanoseconds since the epoch; default: the real clock. */
  now?: () => bigint;
  /** proxy_define_metric fails (status BAD_ARGUMENT) when true. */
  failDefineMetric?: boolean;
}

/** What a filter did with one response body chunk. */
export interface BodyResult {
  /** The callback's return: 0 continue, 1 stop and buffer, 3 stop without buffering (Envoy's FilterDataStatus). */
  action: number;
  /** The chunk as the filter left it (what Envoy would forward on continue). */
  chunk: Buffer;
  /** The response headers as they are now. */
  headers: HeaderList;
}

/** A metric the module defined (proxy_define_metric); its id is its index + 1. */
export interface MetricDefinition {
  type: number;
  name: string;
}

export class ProxyWasmHost {
  readonly logs: LogEntry[] = [];
  /** Every import the module called, counted (a cost measure). */
  readonly hostCalls = new Map<string, number>();
  now: () => bigint;
  /** Result of the last proxy_on_configure. */
  configured = false;
  /** Every proxy_define_metric that succeeded, in order. */
  readonly metricDefinitions: MetricDefinition[] = [];
  failDefineMetric: boolean;

  private readonly exports: FilterExports;
  private nextContextId = 1;
  private rootContextId = 0;
  private configuration: Uint8Array = new Uint8Array(0);
  private readonly defaultRootId: string;
  /** root_id of each plugin context. */
  private readonly rootIds = new Map<number, string>();
  /** Open stream contexts and the plugin context of each. */
  private readonly streams = new Map<number, { root: number }>();
  /** The context of the callback running (whose plugin_root_id the module reads). */
  private current = 0;
  private headers: HeaderList | undefined;
  private responseHeaders: HeaderList | undefined;
  /** Each open stream's response headers, kept from proxy_on_response_headers on (a body callback may modify them). */
  private readonly streamResponseHeaders = new Map<number, HeaderList>();
  /** The body chunk of the running proxy_on_response_body. */
  private chunk: Buffer | undefined;
  /** When set, the next call of this import throws (a trap in the module's callback, as a failed host call would). */
  trapOn: string | undefined;
  private localResponse: LocalResponse | undefined;
  private localResponseBody: Buffer | undefined;
  /** Metric values by name (several definitions of a name share one, as in Envoy). */
  private readonly metricValues = new Map<string, bigint>();

  private constructor(module: WebAssembly.Module, opts: HostOptions) {
    this.now = opts.now ?? (() => BigInt(Date.now()) * 1_000_000n);
    this.defaultRootId = opts.rootId ?? '';
    this.failDefineMetric = opts.failDefineMetric ?? false;
    const env = this.imports();
    const imports: Record<string, Record<string, WebAssembly.ImportValue>> = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      const fn = imp.module === 'env' ? env[imp.name] : undefined;
      if (imp.kind !== 'function' || fn === undefined) {
        throw new Error(`the module imports ${imp.module}.${imp.name} (${imp.kind}), which this host does not provide`);
      }
      const name = imp.name;
      const moduleImports = imports[imp.module] ?? {};
      imports[imp.module] = moduleImports;
      moduleImports[name] = (...args: number[]): number | undefined => {
        this.hostCalls.set(name, (this.hostCalls.get(name) ?? 0) + 1);
        if (this.trapOn === name) {
          this.trapOn = undefined;
          throw new WebAssembly.RuntimeError(`trap forced in ${name}`);
        }
        return fn(...args);
      };
    }
    const exportNames = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
    for (const name of REQUIRED_EXPORTS) if (!exportNames.has(name)) throw new Error(`the module does not export ${name}`);
    const instance = new WebAssembly.Instance(module, imports);
    this.exports = instance.exports as unknown as FilterExports;
    // Integration (spec): _initialize if exported, else _start.
    if (this.exports._initialize) this.exports._initialize();
    else this.exports._start?.();
  }

  /** Instantiates the module and configures one plugin context, as Envoy does. */
  static load(wasm: string | Uint8Array, opts: HostOptions = {}): ProxyWasmHost {
    const bytes = Uint8Array.from(typeof wasm === 'string' ? readFileSync(wasm) : wasm);
    const host = new ProxyWasmHost(new WebAssembly.Module(bytes), opts);
    host.configure(opts.configuration ?? '');
    return host;
  }

  /**
   * Replaces the plugin context by a new one with this configuration (an
   * Envoy configuration update); returns what the module answered.
   */
  configure(configuration: string | Uint8Array, rootId: string = this.defaultRootId): boolean {
    if (this.rootContextId !== 0) this.deletePluginContext(this.rootContextId);
    const root = this.addPluginContext(configuration, rootId);
    this.rootContextId = root;
    return this.configured;
  }

  /** Adds a plugin context with this root_id (the previous ones stay); returns its id. Sets `configured`. */
  addPluginContext(configuration: string | Uint8Array, rootId: string = this.defaultRootId): number {
    const root = this.nextContextId++;
    this.rootIds.set(root, rootId);
    this.call(root, () => this.exports.proxy_on_context_create(root, 0));
    if (this.call(root, () => this.exports.proxy_on_vm_start(root, 0)) === 0) throw new Error('proxy_on_vm_start failed');
    this.reconfigurePluginContext(root, configuration);
    return root;
  }

  /** proxy_on_configure again on an existing plugin context; returns (and sets `configured` to) what the module answered. */
  reconfigurePluginContext(root: number, configuration: string | Uint8Array): boolean {
    if (!this.rootIds.has(root)) throw new Error(`plugin context ${root} does not exist`);
    this.configuration = typeof configuration === 'string' ? encoder.encode(configuration) : configuration;
    this.configured = this.call(root, () => this.exports.proxy_on_configure(root, this.configuration.length)) !== 0;
    return this.configured;
  }

  /** Deletes a plugin context (its streams may still be open, as in Envoy after an update). */
  deletePluginContext(root: number): void {
    if (!this.rootIds.has(root)) throw new Error(`plugin context ${root} does not exist`);
    this.deleteContext(root);
    this.rootIds.delete(root);
  }

  /** The plugin context `configure` made. */
  get pluginContextId(): number {
    return this.rootContextId;
  }

  /** Opens a stream context under a plugin context (default: the current one); returns its id. */
  openStream(root: number = this.rootContextId): number {
    const id = this.nextContextId++;
    this.call(id, () => this.exports.proxy_on_context_create(id, root));
    this.streams.set(id, { root });
    return id;
  }

  /** Delivers request headers to an open stream. */
  sendRequestHeaders(stream: number, headers: HeaderList): RequestResult {
    if (!this.streams.has(stream)) throw new Error(`stream ${stream} is not open`);
    this.headers = headers.map(([k, v]) => [k, v]);
    try {
      return this.phase(stream, this.headers, () => this.exports.proxy_on_request_headers(stream, headers.length, 1));
    } finally {
      this.headers = undefined;
    }
  }

  /** Delivers response headers (`:status` among them) to an open stream; a module without proxy_on_response_headers continues. */
  sendResponseHeaders(stream: number, headers: HeaderList, endOfStream = false): ResponseResult {
    if (!this.streams.has(stream)) throw new Error(`stream ${stream} is not open`);
    this.responseHeaders = headers.map(([k, v]) => [k, v]);
    this.streamResponseHeaders.set(stream, this.responseHeaders);
    try {
      const onResponseHeaders = this.exports.proxy_on_response_headers;
      return this.phase(stream, this.responseHeaders, () => (onResponseHeaders ? onResponseHeaders(stream, headers.length, endOfStream ? 1 : 0) : 0));
    } finally {
      this.responseHeaders = undefined;
    }
  }

  /** Delivers one response body chunk; a module without proxy_on_response_body continues with the chunk as it was. */
  sendResponseBody(stream: number, chunk: Uint8Array, endOfStream: boolean): BodyResult {
    const headers = this.streamResponseHeaders.get(stream);
    if (!this.streams.has(stream) || headers === undefined) throw new Error(`stream ${stream} has no response headers`);
    const onResponseBody = this.exports.proxy_on_response_body;
    this.chunk = Buffer.from(chunk);
    this.responseHeaders = headers;
    try {
      const action = onResponseBody ? this.call(stream, () => onResponseBody(stream, chunk.length, endOfStream ? 1 : 0)) : 0;
      return { action, chunk: this.chunk, headers };
    } finally {
      this.chunk = undefined;
      this.responseHeaders = undefined;
    }
  }

  private phase(stream: number, headers: HeaderList, run: () => number): RequestResult {
    this.localResponse = undefined;
    this.localResponseBody = undefined;
    const action = this.call(stream, run);
    const result: RequestResult = { action: action === 0 ? 'continue' : 'pause', headers };
    if (this.localResponse !== undefined) result.localResponse = this.localResponse;
    if (this.localResponseBody !== undefined) result.localResponseBody = this.localResponseBody;
    return result;
  }

  /** Runs a callback of the module for context `id` (the current context for property reads). */
  private call<T>(id: number, run: () => T): T {
    const previous = this.current;
    this.current = id;
    try {
      return run();
    } finally {
      this.current = previous;
    }
  }

  /** Ends a stream (proxy_on_done, proxy_on_log, proxy_on_delete). */
  closeStream(stream: number): void {
    if (!this.streams.delete(stream)) throw new Error(`stream ${stream} is not open`);
    this.streamResponseHeaders.delete(stream);
    this.deleteContext(stream);
  }

  /** Runs one request's headers through a fresh stream context. */
  request(headers: HeaderList): RequestResult {
    const id = this.openStream();
    try {
      return this.sendRequestHeaders(id, headers);
    } finally {
      this.closeStream(id);
    }
  }

  /** Size of the module's linear memory in bytes (it only ever grows). */
  memoryBytes(): number {
    return this.exports.memory.buffer.byteLength;
  }

  /** A metric's value by name, or undefined if the module never defined it. */
  metric(name: string): bigint | undefined {
    return this.metricValues.get(name);
  }

  warnings(): string[] {
    return this.logs.filter((l) => l.level === LOG_LEVEL.warn).map((l) => l.message);
  }

  private deleteContext(id: number): void {
    this.call(id, () => {
      this.exports.proxy_on_done(id);
      this.exports.proxy_on_log(id);
      this.exports.proxy_on_delete(id);
    });
  }

  // ---- memory helpers ----

  private bytes(ptr: number, len: number): Uint8Array {
    const mem = new Uint8Array(this.exports.memory.buffer);
    if (ptr < 0 || len < 0 || ptr + len > mem.length) throw new Error(`module passed an out-of-bounds span ${ptr}+${len}`);
    return mem.subarray(ptr, ptr + len);
  }

  private string(ptr: number, len: number): string {
    return utf8.decode(this.bytes(ptr, len));
  }

  private setU32(ptr: number, value: number): void {
    new DataView(this.exports.memory.buffer).setUint32(ptr, value, true);
  }

  /** Copies bytes into memory the module allocates, and writes (pointer, size) where it asked. */
  private give(data: Uint8Array, returnData: number, returnSize: number): number {
    let ptr = 0;
    if (data.length > 0) {
      ptr = this.exports.proxy_on_memory_allocate(data.length);
      if (ptr === 0) throw new Error('proxy_on_memory_allocate failed');
      this.bytes(ptr, data.length).set(data);
    }
    this.setU32(returnData, ptr);
    this.setU32(returnSize, data.length);
    return STATUS_OK;
  }

  private requestHeaders(map: number): HeaderList {
    const headers = map === MAP_HTTP_REQUEST_HEADERS ? this.headers : map === MAP_HTTP_RESPONSE_HEADERS ? this.responseHeaders : undefined;
    if (headers === undefined) throw new Error(`header map ${map} is not available here`);
    return headers;
  }

  /** The metric with this id, or undefined. */
  private metricById(id: number): MetricDefinition | undefined {
    return this.metricDefinitions[id - 1];
  }

  /** The root_id of the current context's plugin. */
  private currentRootId(): string | undefined {
    const root = this.streams.get(this.current)?.root ?? this.current;
    return this.rootIds.get(root);
  }

  private imports(): Record<string, (...args: number[]) => number> {
    return {
      proxy_log: (level, ptr, len) => {
        this.logs.push({ level, message: this.string(ptr, len) });
        return STATUS_OK;
      },
      proxy_get_current_time_nanoseconds: (returnTime) => {
        new DataView(this.exports.memory.buffer).setBigUint64(returnTime, this.now(), true);
        return STATUS_OK;
      },
      proxy_get_buffer_bytes: (bufferId, start, maxSize, returnData, returnSize) => {
        if (bufferId === BUFFER_HTTP_RESPONSE_BODY) {
          if (this.chunk === undefined) return STATUS_NOT_FOUND;
          if (start > this.chunk.length) return STATUS_BAD_ARGUMENT;
          return this.give(this.chunk.subarray(start, start + maxSize), returnData, returnSize);
        }
        if (bufferId !== BUFFER_PLUGIN_CONFIGURATION) return STATUS_NOT_FOUND;
        if (start > this.configuration.length) return STATUS_BAD_ARGUMENT;
        return this.give(this.configuration.subarray(start, start + maxSize), returnData, returnSize);
      },
      // As Envoy's body buffers: from 0, drain `size` bytes and prepend the data; at or past the end, append.
      proxy_set_buffer_bytes: (bufferId, start, size, dataPtr, dataLen) => {
        if (bufferId !== BUFFER_HTTP_RESPONSE_BODY || this.chunk === undefined) return STATUS_NOT_FOUND;
        const data = Buffer.from(this.bytes(dataPtr, dataLen));
        if (start === 0) this.chunk = Buffer.concat([data, this.chunk.subarray(Math.min(size, this.chunk.length))]);
        else if (start >= this.chunk.length) this.chunk = Buffer.concat([this.chunk, data]);
        else return STATUS_BAD_ARGUMENT;
        return STATUS_OK;
      },
      proxy_get_property: (pathPtr, pathLen, returnData, returnSize) => {
        // ABI 0.2.1: path segments separated by NUL bytes.
        const path = this.string(pathPtr, pathLen).split('\0');
        const rootId = this.currentRootId();
        if (path.length !== 1 || path[0] !== 'plugin_root_id' || rootId === undefined) return STATUS_NOT_FOUND;
        return this.give(encoder.encode(rootId), returnData, returnSize);
      },
      proxy_get_header_map_pairs: (map, returnData, returnSize) => this.give(serializeHeaderMap(this.requestHeaders(map)), returnData, returnSize),
      proxy_get_header_map_value: (map, keyPtr, keyLen, returnData, returnSize) => {
        const key = this.string(keyPtr, keyLen).toLowerCase();
        const found = this.requestHeaders(map).find(([k]) => k.toLowerCase() === key);
        if (found === undefined) return STATUS_NOT_FOUND;
        return this.give(encoder.encode(found[1]), returnData, returnSize);
      },
      proxy_add_header_map_value: (map, keyPtr, keyLen, valuePtr, valueLen) => {
        this.requestHeaders(map).push([this.string(keyPtr, keyLen).toLowerCase(), this.string(valuePtr, valueLen)]);
        return STATUS_OK;
      },
      proxy_replace_header_map_value: (map, keyPtr, keyLen, valuePtr, valueLen) => {
        const headers = this.requestHeaders(map);
        const key = this.string(keyPtr, keyLen).toLowerCase();
        const value = this.string(valuePtr, valueLen);
        const first = headers.findIndex(([k]) => k.toLowerCase() === key);
        if (first === -1) {
          headers.push([key, value]);
        } else {
          headers[first] = [key, value];
          for (let i = headers.length - 1; i > first; i--) if (headers[i]?.[0].toLowerCase() === key) headers.splice(i, 1);
        }
        return STATUS_OK;
      },
      proxy_remove_header_map_value: (map, keyPtr, keyLen) => {
        const headers = this.requestHeaders(map);
        const key = this.string(keyPtr, keyLen).toLowerCase();
        for (let i = headers.length - 1; i >= 0; i--) if (headers[i]?.[0].toLowerCase() === key) headers.splice(i, 1);
        return STATUS_OK;
      },
      proxy_define_metric: (type, namePtr, nameLen, returnId) => {
        if (this.failDefineMetric || type < 0 || type > 2) return STATUS_BAD_ARGUMENT;
        const name = this.string(namePtr, nameLen);
        this.metricDefinitions.push({ type, name });
        if (!this.metricValues.has(name)) this.metricValues.set(name, 0n);
        this.setU32(returnId, this.metricDefinitions.length);
        return STATUS_OK;
      },
      // The offset is an i64, so a BigInt here whatever the declared type.
      proxy_increment_metric: (id, offset) => {
        const metric = this.metricById(id);
        if (metric === undefined) return STATUS_NOT_FOUND;
        // As Envoy: counters only go up, gauges either way, histograms are not incremented.
        const by = BigInt(offset);
        if (metric.type === METRIC_HISTOGRAM || (metric.type === METRIC_COUNTER && by < 0n)) return STATUS_BAD_ARGUMENT;
        this.metricValues.set(metric.name, (this.metricValues.get(metric.name) ?? 0n) + by);
        return STATUS_OK;
      },
      proxy_get_metric: (id, returnValue) => {
        const metric = this.metricById(id);
        if (metric === undefined) return STATUS_NOT_FOUND;
        new DataView(this.exports.memory.buffer).setBigUint64(returnValue, this.metricValues.get(metric.name) ?? 0n, true);
        return STATUS_OK;
      },
      proxy_send_local_response: (status, detailsPtr, detailsLen, bodyPtr, bodyLen, headersPtr, headersLen, grpcStatus) => {
        if (this.headers === undefined && this.responseHeaders === undefined) throw new Error('proxy_send_local_response outside a request');
        if (this.localResponse !== undefined) throw new Error('proxy_send_local_response called twice');
        this.localResponseBody = Buffer.from(this.bytes(bodyPtr, bodyLen));
        this.localResponse = {
          status,
          details: this.string(detailsPtr, detailsLen),
          body: this.string(bodyPtr, bodyLen),
          headers: deserializeHeaderMap(this.bytes(headersPtr, headersLen).slice()),
          grpcStatus,
        };
        return STATUS_OK;
      },
    };
  }
}
