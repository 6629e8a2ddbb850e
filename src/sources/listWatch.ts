// List+watch of one Kubernetes collection into an in-memory store (what
// client-go calls a reflector): list, then watch from the list's
// resourceVersion; re-watch when the server ends a watch, re-list on 410 Gone,
// back off on errors. The transport is a seam (ListWatchClient) so the logic
// is tested without an apiserver.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import { Backoff, CancellableSleep, errorMessage, systemClock, systemTimers, type Clock, type Timers } from './runtime.js';
import { isRecord } from '../util/json.js';
import { KubeApiError } from '../model/status.js';
import { kubeRequest } from './kubeRequest.js';

export interface WatchEvent {
  /** ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. */
  type: string;
  object: unknown;
}

export interface ListResult {
  resourceVersion: string;
  items: unknown[];
}

export interface ListWatchClient {
  list(path: string, query: Record<string, string>, signal: AbortSignal): Promise<ListResult>;
  /** Streams events until the server ends the watch (resolves) or it fails (rejects). */
  watch(path: string, query: Record<string, string>, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void>;
}

export interface ReflectorOptions<T> {
  /** For logs: what is being watched. */
  name: string;
  client: ListWatchClient;
  /** Collection path, e.g. /apis/coordination.k8s.io/v1/namespaces/kube-system/leases. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Minimal typed view of a raw object; undefined drops it (not of interest or malformed). */
  decode: (raw: unknown) => T | undefined;
  /** Called with the whole store after each list and each watch event that changed it. */
  onChange: (store: ReadonlyMap<string, T>) => void;
  logger: Logger;
  clock?: Clock;
  timers?: Timers;
  backoff?: Backoff;
  /** A watch that ends sooner than this after starting is treated as a failure (no hot loop). */
  minWatchMs?: number;
}

class WatchExpiredError extends Error {}

export class Reflector<T> {
  private readonly options: ReflectorOptions<T>;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly sleeper: CancellableSleep;
  private readonly backoff: Backoff;
  private readonly controller = new AbortController();
  private store = new Map<string, T>();
  private health: 'unknown' | 'ok' | 'failing' = 'unknown';
  private started = false;

  constructor(options: ReflectorOptions<T>) {
    this.options = options;
    this.logger = options.logger.child({ watch: options.name });
    this.clock = options.clock ?? systemClock;
    this.sleeper = new CancellableSleep(options.timers ?? systemTimers);
    this.backoff = options.backoff ?? new Backoff();
  }

  /** Start list+watch; resolves once the first list attempt finished (successful or not). */
  start(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    return new Promise((firstAttemptDone) => {
      void this.run(firstAttemptDone);
    });
  }

  stop(): void {
    this.controller.abort();
    this.sleeper.cancelAll();
  }

  private get aborted(): boolean {
    return this.controller.signal.aborted;
  }

  private async run(firstAttemptDone: () => void): Promise<void> {
    const signal = this.controller.signal;
    const query: Record<string, string> = {};
    if (this.options.labelSelector) query['labelSelector'] = this.options.labelSelector;
    if (this.options.fieldSelector) query['fieldSelector'] = this.options.fieldSelector;
    let notified = false;
    const notifyFirstAttempt = (): void => {
      if (!notified) {
        notified = true;
        firstAttemptDone();
      }
    };
    try {
      while (!this.aborted) {
        let resourceVersion: string;
        try {
          const listed = await this.options.client.list(this.options.path, query, signal);
          if (this.aborted) return;
          this.replace(listed.items);
          resourceVersion = listed.resourceVersion;
          this.markOk();
        } catch (err) {
          notifyFirstAttempt();
          if (this.aborted) return;
          this.markFailing('list', err);
          await this.sleeper.sleep(this.backoff.next());
          continue;
        }
        notifyFirstAttempt();
        // Watch from the list's resourceVersion until it expires or fails.
        for (;;) {
          const watchStartedAt = this.clock();
          let receivedEvent = false;
          try {
            await this.options.client.watch(
              this.options.path,
              { ...query, resourceVersion, allowWatchBookmarks: 'true' },
              (event) => {
                receivedEvent = true;
                resourceVersion = this.apply(event) ?? resourceVersion;
              },
              signal,
            );
          } catch (err) {
            if (this.aborted) return;
            if (err instanceof WatchExpiredError || (err instanceof KubeApiError && err.statusCode === 410)) {
              // Too old a resourceVersion: the list is the only way to catch up. Not an error.
              this.logger.debug('watch expired (410 Gone); re-listing');
              break;
            }
            this.markFailing('watch', err);
            await this.sleeper.sleep(this.backoff.next());
            break;
          }
          if (this.aborted) return;
          // The server ended the watch (its timeout): continue from where we are.
          if (!receivedEvent && this.clock() - watchStartedAt < (this.options.minWatchMs ?? 1000)) {
            await this.sleeper.sleep(this.backoff.next());
            if (this.aborted) return;
          } else {
            this.backoff.reset();
          }
        }
      }
    } finally {
      notifyFirstAttempt();
    }
  }

  /** Applies one watch event; returns its resourceVersion. Throws WatchExpiredError on 410. */
  private apply(event: WatchEvent): string | undefined {
    if (this.aborted) return undefined;
    if (event.type === 'ERROR') {
      const code = isRecord(event.object) ? event.object['code'] : undefined;
      const message = isRecord(event.object) && typeof event.object['message'] === 'string' ? event.object['message'] : 'watch error';
      if (code === 410) throw new WatchExpiredError(message);
      throw new KubeApiError(typeof code === 'number' ? code : 500, message);
    }
    const resourceVersion = objectResourceVersion(event.object);
    if (event.type === 'BOOKMARK') return resourceVersion;
    const key = objectKey(event.object);
    if (key === undefined) return resourceVersion;
    const before = this.store.get(key);
    if (event.type === 'DELETED') {
      if (!this.store.delete(key)) return resourceVersion;
    } else if (event.type === 'ADDED' || event.type === 'MODIFIED') {
      const decoded = this.options.decode(event.object);
      if (decoded === undefined) {
        if (!this.store.delete(key)) return resourceVersion;
      } else {
        if (before !== undefined && sameJson(before, decoded)) return resourceVersion;
        this.store.set(key, decoded);
      }
    } else {
      return resourceVersion;
    }
    this.notify();
    return resourceVersion;
  }

  private replace(items: unknown[]): void {
    const next = new Map<string, T>();
    for (const item of items) {
      const key = objectKey(item);
      const decoded = key === undefined ? undefined : this.options.decode(item);
      if (key !== undefined && decoded !== undefined) next.set(key, decoded);
    }
    this.store = next;
    this.notify();
  }

  private notify(): void {
    try {
      this.options.onChange(this.store);
    } catch (err) {
      this.logger.error({ err: errorMessage(err) }, 'watch listener threw');
    }
  }

  private markOk(): void {
    if (this.health === 'failing') this.logger.info('list+watch recovered');
    this.health = 'ok';
    this.backoff.reset();
  }

  private markFailing(stage: 'list' | 'watch', err: unknown): void {
    if (this.health !== 'failing') {
      this.logger.warn({ stage, err: errorMessage(err) }, 'list+watch failing; retrying with backoff');
    }
    this.health = 'failing';
  }
}

function objectKey(obj: unknown): string | undefined {
  if (!isRecord(obj) || !isRecord(obj['metadata'])) return undefined;
  const name = obj['metadata']['name'];
  const namespace = obj['metadata']['namespace'];
  if (typeof name !== 'string' || name === '') return undefined;
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}/${name}` : name;
}

function objectResourceVersion(obj: unknown): string | undefined {
  if (!isRecord(obj) || !isRecord(obj['metadata'])) return undefined;
  const rv = obj['metadata']['resourceVersion'];
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export interface KubeListWatchClientOptions {
  /** Deadline for a list request. */
  listTimeoutMs?: number;
  /** Watches are ended by the server after a random time in [min, 2*min) seconds, like client-go. */
  watchTimeoutSeconds?: number;
}

/**
 * ListWatchClient for the kubeconfig's current cluster: lists over node:https
 * with the kubeconfig's credentials, watches with client-node's Watch.
 */
export function createKubeListWatchClient(kubeConfig: KubeConfig, options: KubeListWatchClientOptions = {}): ListWatchClient {
  const listTimeoutMs = options.listTimeoutMs ?? 30_000;
  const watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
  const watcher = new Watch(kubeConfig);

  return {
    async list(path, query, signal) {
      const body = await kubeRequest(kubeConfig, { method: 'GET', path, query, signal, timeoutMs: listTimeoutMs });
      const parsed: unknown = JSON.parse(body);
      if (!isRecord(parsed) || !Array.isArray(parsed['items'])) throw new Error(`GET ${path}: not a list`);
      const metadata = isRecord(parsed['metadata']) ? parsed['metadata'] : {};
      const resourceVersion = typeof metadata['resourceVersion'] === 'string' ? metadata['resourceVersion'] : '';
      return { resourceVersion, items: parsed['items'] };
    },

    watch(path, query, onEvent, signal) {
      return new Promise<void>((resolve, reject) => {
        let aborter: AbortController | undefined;
        const onAbort = (): void => aborter?.abort();
        signal.addEventListener('abort', onAbort, { once: true });
        const timeoutSeconds = watchTimeoutSeconds + Math.floor(Math.random() * watchTimeoutSeconds);
        let failure: Error | undefined;
        // The server ends the watch after timeoutSeconds; if it does not (dead peer, no FIN), end it ourselves.
        let watchdogFired = false;
        const watchdog = setTimeout(
          () => {
            watchdogFired = true;
            aborter?.abort();
          },
          (timeoutSeconds + 30) * 1000,
        );
        watcher
          .watch(
            path,
            { ...query, timeoutSeconds },
            (type: string, object: unknown) => {
              if (failure) return;
              try {
                onEvent({ type, object });
              } catch (err) {
                // The handler refuses the stream (410 Gone, error event): end it.
                failure = err instanceof Error ? err : new Error(String(err));
                aborter?.abort();
              }
            },
            (err: unknown) => {
              clearTimeout(watchdog);
              signal.removeEventListener('abort', onAbort);
              if (failure) reject(failure);
              else if (signal.aborted || watchdogFired || err === null || err === undefined) resolve();
              else reject(watchError(err));
            },
          )
          .then((controller) => {
            aborter = controller;
            if (signal.aborted || failure || watchdogFired) controller.abort();
          })
          .catch((err: unknown) => {
            clearTimeout(watchdog);
            signal.removeEventListener('abort', onAbort);
            reject(watchError(err));
          });
      });
    },
  };
}

function watchError(err: unknown): Error {
  if (isRecord(err) && typeof err['statusCode'] === 'number') {
    return new KubeApiError(err['statusCode'], `watch: HTTP ${err['statusCode']}`);
  }
  return err instanceof Error ? err : new Error(String(err));
}
