// `mvproxy admin events [--follow]`: the control plane's recent events, one
// line each (as `kubectl get events` prints them), then with --follow every
// new one as it happens, over the admin API's WatchEvents stream.
import type * as grpc from '@grpc/grpc-js';
import type { AdminClient } from '../generated/mvproxy/admin/v1/Admin.js';
import type { Event__Output } from '../generated/mvproxy/admin/v1/Event.js';

/** Column widths: the longest kind, a typical apiserver name. */
const KIND_WIDTH = 'sidecar-disconnected'.length;
const SUBJECT_WIDTH = 10;

export const EVENTS_HEADER = `${'TIME'.padEnd(24)}  ${'KIND'.padEnd(KIND_WIDTH)}  ${'SUBJECT'.padEnd(SUBJECT_WIDTH)}  MESSAGE`;

/** One event, one line (a message never spans lines, whatever Envoy wrote). */
export function formatEvent(e: Event__Output): string {
  const message = e.message.replace(/[\r\n]+/g, ' ');
  return `${e.time.padEnd(24)}  ${e.kind.padEnd(KIND_WIDTH)}  ${e.subject.padEnd(SUBJECT_WIDTH)}  ${message}`;
}

/**
 * Streams the events to `write` (a header first, or one JSON object per line
 * with `json`); resolves when the server ends the stream (without follow), or
 * when `signal` aborts (with follow).
 */
export function streamEvents(
  client: AdminClient,
  options: { follow: boolean; limit?: number; json: boolean; signal?: AbortSignal },
  write: (line: string) => void,
): Promise<void> {
  if (!options.json) write(EVENTS_HEADER);
  const call: grpc.ClientReadableStream<Event__Output> = client.WatchEvents({ follow: options.follow, limit: options.limit ?? 0 });
  return new Promise((resolve, reject) => {
    const abort = (): void => call.cancel();
    options.signal?.addEventListener('abort', abort, { once: true });
    call.on('data', (e: Event__Output) => write(options.json ? JSON.stringify(e) : formatEvent(e)));
    call.on('end', () => resolve());
    call.on('error', (err: grpc.ServiceError) => {
      // Cancelled by us (Ctrl-C, the signal): a normal end.
      if (options.signal?.aborted) resolve();
      else reject(new Error(`WatchEvents: ${err.details || err.message}`));
    });
  });
}
