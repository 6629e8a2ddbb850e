// A ListWatchClient whose lists answer from a map and whose watches the test
// drives event by event.
import assert from 'node:assert/strict';

import type { ListResult, ListWatchClient, WatchEvent } from '../../src/sources/listWatch.js';

export interface OpenWatch {
  path: string;
  query: Record<string, string>;
  send(event: WatchEvent): void;
  end(err?: Error): void;
}

export class FakeListWatch implements ListWatchClient {
  readonly lists: Array<{ path: string; query: Record<string, string> }> = [];
  readonly watches: OpenWatch[] = [];
  readonly objects = new Map<string, unknown[]>();
  resourceVersion = 1;

  async list(p: string, query: Record<string, string>): Promise<ListResult> {
    this.lists.push({ path: p, query });
    return { resourceVersion: String(this.resourceVersion), items: structuredClone(this.objects.get(p) ?? []) };
  }

  watch(p: string, query: Record<string, string>, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let open = true;
      const end = (err?: Error): void => {
        if (!open) return;
        open = false;
        if (err) reject(err);
        else resolve();
      };
      signal.addEventListener('abort', () => end(), { once: true });
      this.watches.push({
        path: p,
        query,
        end,
        send: (event) => {
          if (!open) throw new Error('watch is closed');
          try {
            onEvent(event);
          } catch (err) {
            end(err instanceof Error ? err : new Error(String(err)));
          }
        },
      });
    });
  }

  /** The latest watch on a path. */
  watchOn(p: string): OpenWatch {
    const w = [...this.watches].reverse().find((x) => x.path === p);
    assert.ok(w, `no watch on ${p}`);
    return w;
  }
}
