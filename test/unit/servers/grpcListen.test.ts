import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../../src/servers/grpcListen.js';

/**
 * A separate process that lstat()s `path` in a tight loop until `stopFile`
 * appears, and reports every (kind, mode) it saw with how often: it sees the
 * file system as any other local user would, between our own event-loop turns.
 */
const WATCHER = `
const fs = require('node:fs');
const [path, stopFile] = process.argv.slice(1);
const seen = {};
process.stdout.write('looping\\n');
for (let i = 0; ; i++) {
  try {
    const st = fs.lstatSync(path);
    const key = (st.isSocket() ? 'socket ' : 'other ') + (st.mode & 0o7777).toString(8).padStart(4, '0');
    seen[key] = (seen[key] || 0) + 1;
  } catch {}
  if (i % 100 === 0 && fs.existsSync(stopFile)) break;
}
process.stdout.write(JSON.stringify(seen));
`;

async function watchModes(path: string, during: () => Promise<void>): Promise<Record<string, number>> {
  const stopFile = `${path}.stop`;
  const child = spawn(process.execPath, ['-e', WATCHER, path, stopFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  // Start only once the watcher is looping (a loaded machine can take seconds to start it).
  const looping = new Promise<void>((resolve) => {
    const check = (): void => {
      if (out.includes('\n')) resolve();
      else child.stdout.once('data', check);
    };
    check();
  });
  await Promise.race([looping, closed]);
  try {
    await during();
  } finally {
    writeFileSync(stopFile, '');
    await closed;
    rmSync(stopFile, { force: true });
  }
  return JSON.parse(out.slice(out.indexOf('\n') + 1)) as Record<string, number>;
}

function modeOf(path: string): number {
  return lstatSync(path).mode & 0o7777;
}

/** Connects and disconnects; resolves true if the connection was accepted. */
function canConnect(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

describe('listenUnix: a socket never exists with a looser mode than intended', () => {
  let dir: string;
  let savedUmask: number;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'mvp-listen-'));
    // The worst umask: a socket bound straight at its path would be 0777 until chmod.
    savedUmask = process.umask(0);
  });

  after(() => {
    process.umask(savedUmask);
    rmSync(dir, { recursive: true, force: true });
  });

  it('appears at its path owner-only (0600) by default, and serves', async () => {
    const path = join(dir, 'default.sock');
    const server = createGrpcServer();
    assert.equal(await listenUnix(server, path), `unix://${path}`);
    assert.ok(lstatSync(path).isSocket());
    assert.equal(modeOf(path), 0o600);
    assert.equal(await canConnect(path), true);
    await shutdownGrpcServer(server, 100);
  });

  it('appears with the mode asked for (0660)', async () => {
    const path = join(dir, 'group.sock');
    const server = createGrpcServer();
    await listenUnix(server, path, 0o660);
    assert.equal(modeOf(path), 0o660);
    await shutdownGrpcServer(server, 100);
  });

  it('another process watching the path through 40 starts only ever sees the final mode', async () => {
    const path = join(dir, 'watched.sock');
    for (const mode of [0o600, 0o660]) {
      const seen = await watchModes(path, async () => {
        for (let i = 0; i < 20; i++) {
          const server = createGrpcServer();
          await listenUnix(server, path, mode);
          await shutdownGrpcServer(server, 100);
        }
      });
      const expected = `socket ${mode.toString(8).padStart(4, '0')}`;
      assert.ok((seen[expected] ?? 0) > 0, `the watcher saw the socket: ${JSON.stringify(seen)}`);
      assert.deepEqual(Object.keys(seen), [expected], `every observation: ${JSON.stringify(seen)}`);
    }
  });

  it('the folder it is bound in is 0700 and ours, and is gone afterwards', async () => {
    const sub = join(dir, 'private');
    mkdirSync(sub);
    const server = createGrpcServer();
    // Observe the folder the socket is bound in, as the bind starts and as it completes.
    const seen: string[] = [];
    const describeFolder = (address: string): string => {
      const folder = dirname(address.replace(/^unix:\/\//, ''));
      const st = lstatSync(folder);
      return `${dirname(folder) === sub ? 'in place' : folder} ${st.isDirectory() ? 'dir' : 'other'} ${(st.mode & 0o777).toString(8)} uid=${st.uid}`;
    };
    const bindAsync = server.bindAsync.bind(server);
    server.bindAsync = (address, credentials, callback) => {
      seen.push(describeFolder(address));
      bindAsync(address, credentials, (err, port) => {
        seen.push(describeFolder(address));
        callback(err, port);
      });
    };
    await listenUnix(server, join(sub, 'a.sock'));
    const uid = process.getuid?.() ?? 0;
    assert.deepEqual(seen, [`in place dir 700 uid=${uid}`, `in place dir 700 uid=${uid}`]);
    assert.deepEqual(readdirSync(sub), ['a.sock']);
    await shutdownGrpcServer(server, 100);
  });

  it('replaces a stale socket left by a previous run, and refuses to replace anything else', async () => {
    const path = join(dir, 'stale.sock');
    const first = createGrpcServer();
    await listenUnix(first, path);
    // A crashed run: the file stays, nobody listens.
    first.forceShutdown();
    assert.ok(lstatSync(path).isSocket());
    assert.equal(await canConnect(path), false);
    const server = createGrpcServer();
    await listenUnix(server, path);
    assert.equal(modeOf(path), 0o600);
    assert.equal(await canConnect(path), true);
    await shutdownGrpcServer(server, 100);

    const regular = join(dir, 'regular');
    writeFileSync(regular, 'not a socket');
    const other = createGrpcServer();
    await assert.rejects(listenUnix(other, regular), /exists and is not a socket/);
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.startsWith('.mvp-')),
      [],
      'no private folder left behind',
    );
    other.forceShutdown();
  });

  it('shutting down removes the socket file', async () => {
    const path = join(dir, 'removed.sock');
    const server = createGrpcServer();
    await listenUnix(server, path);
    await shutdownGrpcServer(server, 100);
    assert.throws(() => lstatSync(path), { code: 'ENOENT' });
  });

  it('a path too long for a Unix socket is refused with its name, leaving nothing behind', async (t) => {
    const server = createGrpcServer();
    t.after(() => server.forceShutdown());
    // Too long itself.
    await assert.rejects(listenUnix(server, join(dir, 'x'.repeat(100))), /too long for a Unix socket \(/);
    // Fits, but not with the private folder it is bound in first.
    const deep = join(dir, 'y'.repeat(99 - Buffer.byteLength(dir)));
    mkdirSync(deep);
    const fits = join(deep, 'a.s');
    assert.equal(Buffer.byteLength(fits), 104);
    await assert.rejects(listenUnix(server, fits), /too long for a Unix socket bound in a private folder first/);
    assert.deepEqual(readdirSync(deep), []);
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.startsWith('.mvp-')),
      [],
    );
  });

  it('a relative path is refused', async () => {
    await assert.rejects(listenUnix(createGrpcServer(), 'relative.sock'), /must be absolute/);
  });
});

describe('createGrpcServer: a silent connection is dropped by keepalive', () => {
  it('a client that connects and never speaks HTTP/2 is disconnected once a keepalive ping goes unanswered', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mvp-keepalive-'));
    const server = createGrpcServer({ 'grpc.keepalive_time_ms': 300, 'grpc.keepalive_timeout_ms': 300 });
    const path = join(dir, 'k.sock');
    await listenUnix(server, path);
    t.after(async () => {
      await shutdownGrpcServer(server, 100);
      rmSync(dir, { recursive: true, force: true });
    });
    const started = Date.now();
    const closedAfter = await new Promise<number>((resolve) => {
      const socket = connect(path);
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(Date.now() - started));
      socket.resume();
    });
    assert.ok(closedAfter < 5000, `closed after ${closedAfter} ms`);
  });
});
