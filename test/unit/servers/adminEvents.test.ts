// The admin API's WatchEvents stream (a real grpc-js client over a Unix socket,
// a journal for a backend) and the CLI's one-line form of an event.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { addAdminService, adminGrpc, type AdminBackend } from '../../../src/servers/admin.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../../src/servers/grpcListen.js';
import { EventJournal } from '../../../src/serve/events.js';
import { EVENTS_HEADER, formatEvent, streamEvents } from '../../../src/cli/adminEvents.js';
import type { AdminClient } from '../../../src/generated/mvproxy/admin/v1/Admin.js';
import type { ClusterEvent } from '../../../src/model/events.js';

const AT = Date.UTC(2026, 0, 2, 3, 4, 5, 6);

function event(subject: string, message = 'drained: traffic moves off it'): ClusterEvent {
  return { at: AT, kind: 'drain', subject, message };
}

async function serve(t: TestContext, journal: EventJournal): Promise<AdminClient> {
  const backend: AdminBackend = {
    status: () => ({ apiservers: [], sidecars: [] }),
    explain: () => {
      throw new Error('not used');
    },
    drain: async () => [],
    undrain: async () => [],
    pushedConfig: () => {
      throw new Error('not used');
    },
    recentEvents: (limit) => journal.recent(limit),
    followEvents: (listener) => journal.follow(listener),
  };
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-events-'));
  const server = createGrpcServer();
  addAdminService(server, backend, pino({ level: 'silent' }));
  const address = await listenUnix(server, join(dir, 'admin.sock'));
  const client = new (adminGrpc().mvproxy.admin.v1.Admin)(address, grpc.credentials.createInsecure());
  t.after(async () => {
    client.close();
    await shutdownGrpcServer(server, 100);
    rmSync(dir, { recursive: true, force: true });
  });
  return client;
}

describe('WatchEvents', () => {
  test('without follow, sends the recent events oldest first, then ends', async (t) => {
    const journal = new EventJournal(10);
    journal.record([event('kas-a'), event('kas-b')]);
    const client = await serve(t, journal);
    const lines: string[] = [];
    await streamEvents(client, { follow: false, json: true }, (line) => lines.push(line));
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      [
        { sequence: '1', time: '2026-01-02T03:04:05.006Z', kind: 'drain', subject: 'kas-a', message: 'drained: traffic moves off it' },
        { sequence: '2', time: '2026-01-02T03:04:05.006Z', kind: 'drain', subject: 'kas-b', message: 'drained: traffic moves off it' },
      ],
    );
  });

  test('with follow, sends the recent events, then each new one, until the caller cancels', async (t) => {
    const journal = new EventJournal(10);
    journal.record([event('kas-a')]);
    const client = await serve(t, journal);
    const stop = new AbortController();
    const subjects: string[] = [];
    const done = streamEvents(client, { follow: true, json: true, signal: stop.signal }, (line) => {
      subjects.push(JSON.parse(line).subject);
      if (subjects.length === 1) journal.record([event('kas-b')]);
      if (subjects.length === 2) stop.abort();
    });
    await done;
    assert.deepEqual(subjects, ['kas-a', 'kas-b']);
    // The server lets go of the follower once the call is cancelled.
    for (let i = 0; i < 100 && journal.followers > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(journal.followers, 0);
  });
});

describe('admin events output', () => {
  test('one line per event under a header, as kubectl get events prints them', () => {
    const line = formatEvent({ sequence: '7', time: '2026-01-02T03:04:05.006Z', kind: 'nack', subject: 'kas-a', message: 'rejected\nRouteConfiguration' });
    assert.equal(line, '2026-01-02T03:04:05.006Z  nack                  kas-a       rejected RouteConfiguration');
    assert.match(EVENTS_HEADER, /^TIME\s+KIND\s+SUBJECT\s+MESSAGE$/);
  });
});
