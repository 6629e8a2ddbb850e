// The relay between the host and the sandbox's network namespace
// (src/tools/sandbox/relay.ts, relayAgent.ts, relayHeader.ts). The agent runs here
// without entering a namespace: what is checked is the relaying.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { HostRelays } from '../../../../src/tools/sandbox/relay.js';
import { parseRelayHeader, relayHeader } from '../../../../src/tools/sandbox/relayHeader.js';
import { freePorts } from '../../../../src/tools/sandbox/ports.js';

/** Sends `text` through host port `port`, half-closes, and returns all that comes back. */
async function roundTrip(port: number, text: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.end(text);
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('utf8');
}

describe('the relay header', () => {
  it('names an IPv4 target and reads back the same', () => {
    assert.deepEqual(parseRelayHeader(relayHeader({ host: '192.0.2.11', port: 6443 }).trimEnd()), { host: '192.0.2.11', port: 6443 });
  });

  it('names an IPv6 target in brackets and reads back the same', () => {
    assert.equal(relayHeader({ host: '::1', port: 80 }), '[::1]:80\n');
    assert.deepEqual(parseRelayHeader('[::1]:80'), { host: '::1', port: 80 });
  });

  it('names no DNS name and no port out of range', () => {
    for (const line of ['example.com:80', '192.0.2.11:0', '192.0.2.11:70000', '192.0.2.11', '']) assert.equal(parseRelayHeader(line), undefined, line);
  });
});

describe('a host relay', () => {
  let relays: HostRelays;
  let echo: Server;
  let echoPort = 0;
  let unusedPort = 0;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-relay-'));
    relays = await HostRelays.start(dir, dir, []);
    // Answers with what it got once the client is done, then closes.
    echo = createServer({ allowHalfOpen: true }, (s) => {
      const got: Buffer[] = [];
      s.on('data', (c: Buffer) => got.push(c));
      s.on('end', () => s.end(`echo:${Buffer.concat(got).toString('utf8')}`));
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    const address = echo.address();
    if (address === null || typeof address === 'string') throw new Error('no echo port');
    echoPort = address.port;
    [unusedPort] = (await freePorts(1)) as [number];
  });
  after(async () => {
    echo.close();
    await relays.stop();
  });

  it('carries a connection both ways, half-close included, to its target', async () => {
    const [hostPort] = (await freePorts(1)) as [number];
    await relays.expose(hostPort, { host: '127.0.0.1', port: echoPort });
    assert.equal(await roundTrip(hostPort, 'hello'), 'echo:hello');
  });

  it('closes the host connection when its target refuses', async () => {
    const [hostPort] = (await freePorts(1)) as [number];
    await relays.expose(hostPort, { host: '127.0.0.1', port: unusedPort });
    assert.equal(await roundTrip(hostPort, 'anyone?'), '');
  });

  it('says what each host port reaches', async () => {
    const [hostPort] = (await freePorts(1)) as [number];
    await relays.expose(hostPort, { host: '127.0.0.1', port: echoPort });
    assert.deepEqual(relays.targets().get(hostPort), { host: '127.0.0.1', port: echoPort });
  });
});
