// What is wrong with one apiserver's discovery answers, logged and counted
// (apiserver_peer_discovery_sync_errors_total) once per change, never per
// poll: unusable documents, a failing OpenAPI v3 index read, dropped entries.
import type { Logger } from '../util/log.js';
import type { Metrics } from '../metrics.js';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';
import { DiscoverySyncError, OPENAPI_V3_INDEX_PATH, type DiscoverySyncErrorType, type OpenApiIndexState } from './discoveryReads.js';
import { errorMessage } from './runtime.js';

/** Failures about a body the apiserver sent: counted once per change (per distinct body, or per transition into them), never per poll. */
const COUNTED_ONCE_PER_CHANGE: ReadonlySet<DiscoverySyncErrorType> = new Set(['parse', 'too_large']);

/** New dropped entries logged one by one per document change; the rest in one line. */
const MAX_DROPPED_LOGGED = 20;

export class DiscoveryProblemLog {
  /** The last failure of the OpenAPI v3 index read reported (failureKey), undefined while it reads well: to warn and count once per change. */
  private openapiFailure: string | undefined;
  /** Content, per path: the last failure (status or unreadable body) reported, to warn and count once per change. */
  private readonly documentFailure = new Map<string, string>();
  /** Per path (`/api`, `/apis`, `/openapi/v3`), the dropped entries (by key) of its current document: each is logged once, when it first appears. */
  private readonly droppedLogged = new Map<string, Set<string>>();

  constructor(
    private readonly logger: Logger,
    private readonly metrics: Pick<Metrics, 'peerDiscoverySyncErrors'>,
  ) {}

  /** Counts apiserver_peer_discovery_sync_errors_total by the failure's type, and returns the type. */
  countSyncError(err: unknown): DiscoverySyncErrorType {
    const type = syncErrorType(err);
    this.metrics.peerDiscoverySyncErrors.inc({ type });
    return type;
  }

  /** The OpenAPI v3 index read well. */
  openApiIndexRead(): void {
    if (this.openapiFailure !== undefined) this.logger.info('OpenAPI v3 index fetch recovered');
    this.openapiFailure = undefined;
  }

  /** The OpenAPI v3 index read failed (not aborted): counted and warned once per change. */
  openApiIndexFailed(err: unknown, keepingLastGood: boolean): void {
    const type = syncErrorType(err);
    const key = failureKey(err);
    const repeated = this.openapiFailure === key;
    if (!COUNTED_ONCE_PER_CHANGE.has(type) || !repeated) this.metrics.peerDiscoverySyncErrors.inc({ type });
    if (!repeated) this.logger.warn({ errorType: type, err: errorMessage(err), keepingLastGood }, 'OpenAPI v3 index fetch failing');
    this.openapiFailure = key;
  }

  /** The document of `path` read well (after a failure: logged). */
  documentRead(path: string): void {
    if (this.documentFailure.delete(path)) this.logger.info({ path }, 'discovery document readable again');
  }

  /**
   * An answered request whose answer is not a usable document (an error
   * status, a body that is not an APIGroupDiscoveryList, or one over the size
   * limit). A status error counts at every poll, as a failed sync; an
   * unreadable body once per distinct body; a body too large once until the
   * path reads well again. Warned once per change.
   */
  documentFailed(path: string, err: unknown, keepingLastGood: boolean): void {
    const type = syncErrorType(err);
    const key = failureKey(err);
    const repeated = this.documentFailure.get(path) === key;
    if (!COUNTED_ONCE_PER_CHANGE.has(type) || !repeated) this.metrics.peerDiscoverySyncErrors.inc({ type });
    if (repeated) return;
    this.documentFailure.set(path, key);
    this.logger.warn(
      { path, errorType: type, err: errorMessage(err), keepingLastGood },
      keepingLastGood
        ? 'discovery document unusable; keeping the last good one (the apiserver answered: it stays reachable)'
        : 'discovery document unusable and none read before: its routes stay local (the apiserver answered: it stays reachable)',
    );
  }

  /**
   * Logs each dropped entry once, when it first appears in the document of
   * `path` (warn for malformed ones, info for valid names too long to route),
   * and counts one parse sync error for a new document that has malformed
   * entries: once per document change, never per poll.
   */
  dropped(path: string, dropped: readonly DroppedDiscoveryEntry[]): void {
    const fresh = this.freshlyDropped(path, dropped, droppedKey);
    if (dropped.some((d) => d.kind === 'malformed')) this.metrics.peerDiscoverySyncErrors.inc({ type: 'parse' });
    for (const entry of fresh.slice(0, MAX_DROPPED_LOGGED)) {
      const fields = { path, entry: describeEntry(entry), at: entry.path, reason: entry.reason };
      if (entry.kind === 'malformed')
        this.logger.warn(fields, 'malformed discovery entry dropped: mvproxy does not route on it; the rest of the document is used');
      else this.logger.info(fields, 'discovery entry not routable (names too long for a route matcher): requests for it stay on the local apiserver');
    }
    if (fresh.length > MAX_DROPPED_LOGGED) {
      this.logger.warn({ path, more: fresh.length - MAX_DROPPED_LOGGED }, 'more discovery entries dropped (not logged one by one)');
    }
  }

  /**
   * The same for a new OpenAPI v3 index: each malformed entry warned about
   * once, when it first appears; one parse sync error for a new index that
   * has any, never per poll.
   */
  openApiIndexDropped(state: OpenApiIndexState): void {
    const entries = [...state.dropped.map((entry) => ({ entry, listed: false })), ...state.notFromPeer.map((entry) => ({ entry, listed: true }))];
    const fresh = this.freshlyDropped(OPENAPI_V3_INDEX_PATH, entries, ({ entry }) => JSON.stringify([entry.key, entry.reason]));
    if (entries.length > 0) this.metrics.peerDiscoverySyncErrors.inc({ type: 'parse' });
    for (const { entry, listed } of fresh.slice(0, MAX_DROPPED_LOGGED)) {
      const fields = { path: OPENAPI_V3_INDEX_PATH, entry: truncated(entry.key), reason: entry.reason };
      if (listed)
        this.logger.warn(
          fields,
          'malformed OpenAPI v3 index entry: never offered from this apiserver through other sidecars (its own clients get it as listed); the rest of the index is used',
        );
      else this.logger.warn(fields, 'malformed OpenAPI v3 index entry dropped: the rest of the index is used');
    }
    if (fresh.length > MAX_DROPPED_LOGGED) {
      this.logger.warn(
        { path: OPENAPI_V3_INDEX_PATH, more: fresh.length - MAX_DROPPED_LOGGED },
        'more OpenAPI v3 index entries dropped (not logged one by one)',
      );
    }
  }

  /**
   * The entries of `dropped` (what the new document of `path` dropped) that
   * its previous document had not dropped; remembers them all for the next
   * change, so an entry that was fixed and comes back is reported again.
   */
  private freshlyDropped<T>(path: string, dropped: readonly T[], keyOf: (entry: T) => string): T[] {
    const before = this.droppedLogged.get(path) ?? new Set<string>();
    const now = new Set<string>();
    const fresh: T[] = [];
    for (const entry of dropped) {
      const key = keyOf(entry);
      if (!before.has(key) && !now.has(key)) fresh.push(entry);
      now.add(key);
    }
    this.droppedLogged.set(path, now);
    return fresh;
  }
}

function syncErrorType(err: unknown): DiscoverySyncErrorType {
  return err instanceof DiscoverySyncError ? err.type : 'fetch';
}

/**
 * What tells one failure from the next, to report each once: the type alone
 * for a network failure (its message varies from one attempt to the next),
 * else the type and the body's hash or the message.
 */
function failureKey(err: unknown): string {
  const type = syncErrorType(err);
  if (type === 'fetch' || type === 'timeout') return type;
  return err instanceof DiscoverySyncError && err.bodyHash !== undefined ? `${type} ${err.bodyHash}` : `${type} ${errorMessage(err)}`;
}

function truncated(value: string): string {
  return value.length > 80 ? `${value.slice(0, 80)}...` : value;
}

function droppedKey(entry: DroppedDiscoveryEntry): string {
  return JSON.stringify([entry.kind, entry.document, entry.group, entry.version, entry.resource, entry.subresource, entry.reason]);
}

/** `group "apps" version "v1" resource "deployments"`, as far as the names are known. */
function describeEntry(entry: DroppedDiscoveryEntry): string {
  const parts: string[] = [];
  for (const field of ['group', 'version', 'resource', 'subresource'] as const) {
    const value = entry[field];
    if (value !== undefined) parts.push(`${field} ${JSON.stringify(truncated(value))}`);
  }
  return parts.length > 0 ? parts.join(' ') : 'an entry whose names cannot be read';
}
