// The HTTP filters of a translated listener, and whether a route switches
// ext_proc, the document filters and the identity filter on.
import assert from 'node:assert/strict';

import type { FilterConfig } from '../../src/generated/envoy/config/route/v3/FilterConfig.js';
import type { Route } from '../../src/generated/envoy/config/route/v3/Route.js';
import type { HttpConnectionManager } from '../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import { DOCUMENT_FILTERS, type EnvoyResources } from '../../src/translator/translator.js';
import type { MergedDocument } from '../../src/model/requestInfo.js';
import { unpack } from './translatorFixtures.js';

/** The HTTP connection manager of the listener's one filter chain. */
export function connectionManager(resources: EnvoyResources): HttpConnectionManager {
  const filter = resources.listeners[0]?.filter_chains?.[0]?.filters?.[0];
  assert.equal(filter?.name, 'envoy.filters.network.http_connection_manager');
  return unpack<HttpConnectionManager>(filter?.typed_config, 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager');
}

/** A route's generic per-filter switch (FilterConfig) for `filter`, if it has one. */
export function filterSwitch(route: Route, filter: string): FilterConfig | undefined {
  const perRoute = route.typed_per_filter_config?.[filter];
  return perRoute === undefined ? undefined : unpack<FilterConfig>(perRoute, 'envoy.config.route.v3.FilterConfig');
}

/** Whether Envoy calls ext_proc on this route: off in the filter chain, on where the route says so. */
export function extProcOn(route: Route): boolean {
  return filterSwitch(route, 'envoy.filters.http.ext_proc')?.disabled === false;
}

/** Whether the identity filter runs on this route: on in the filter chain, off where the route says so. */
export function identityOn(route: Route): boolean {
  return filterSwitch(route, 'mvproxy.identity')?.disabled !== true;
}

/** Whether the filter holding `document` answers on this route: off in the filter chain, on where the route says so. */
export function documentFilterOn(route: Route, document: MergedDocument): boolean {
  const perRoute = filterSwitch(route, DOCUMENT_FILTERS[document]);
  return perRoute !== undefined && perRoute.disabled !== true;
}

/** Whether any document filter answers on this route. */
export function anyDocumentFilterOn(route: Route): boolean {
  return (Object.keys(DOCUMENT_FILTERS) as MergedDocument[]).some((document) => documentFilterOn(route, document));
}
