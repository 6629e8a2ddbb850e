// The identity filter: one of the two filters of the filter module
// (envoy/filters, AssemblyScript compiled to WebAssembly; the document filters
// are the other) that runs inside each sidecar and turns the verified client
// certificate into the X-Remote-* headers kube-apiserver's request-header
// authenticator reads, as its x509 authenticator would have derived them
// (docs/identity.md). No call leaves Envoy per request.
//
// It is on in the filter chain and switched off per route on the routes of
// clients without a certificate: a route that forgets to switch it off costs
// a WASM call, never identity. The module and this configuration travel over
// ECDS with the document filters' (documentFilters.ts), so a new module
// replaces no listener and drains no connection.
import type { FilterConfig } from '../generated/envoy/config/route/v3/FilterConfig.js';
import type { Any } from '../generated/google/protobuf/Any.js';
import type { StringValue } from '../generated/google/protobuf/StringValue.js';
import { IDENTITY_FILTER } from './names.js';
import type { IdentityHeaders, TranslatorSettings } from './settings.js';
import { typedConfig } from './typed.js';

const DEFAULT_IDENTITY_HEADERS: IdentityHeaders = {
  userHeader: 'x-remote-user',
  uidHeader: 'x-remote-uid',
  groupHeader: 'x-remote-group',
  extraHeaderPrefix: 'x-remote-extra-',
};

/** The plugin configuration: which headers to set. The filter refuses one it cannot read, and Envoy then NACKs it. */
export function identityFilterConfiguration(settings: TranslatorSettings): Any {
  return typedConfig<StringValue>('google.protobuf.StringValue', { value: JSON.stringify(settings.identityHeaders ?? DEFAULT_IDENTITY_HEADERS) });
}

/** typed_per_filter_config entry of a route whose clients present no certificate. */
export function identityFilterDisabled(): Record<string, Any> {
  return { [IDENTITY_FILTER]: typedConfig<FilterConfig>('envoy.config.route.v3.FilterConfig', { disabled: true }) };
}
