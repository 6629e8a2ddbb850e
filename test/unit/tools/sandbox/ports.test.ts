// Picking free ports for the sandbox and the tests (src/tools/sandbox/ports.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { freePorts, pickableRange } from '../../../../src/tools/sandbox/ports.js';

function rangeFile(content: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'mvproxy-ports-')), 'ip_local_port_range');
  writeFileSync(file, content);
  return file;
}

describe('pickableRange', () => {
  it('is the ports from 20000 up to just below the kernel ephemeral range', () => {
    assert.deepEqual(pickableRange(rangeFile('32768\t60999\n')), [20_000, 32_767]);
  });

  it('is undefined when the ephemeral range leaves too little room below it, or cannot be read', () => {
    assert.equal(pickableRange(rangeFile('20500\t60999\n')), undefined);
    assert.equal(pickableRange(rangeFile('garbage')), undefined);
    assert.equal(pickableRange(join(tmpdir(), 'mvproxy-no-such-file')), undefined);
  });
});

describe('freePorts', () => {
  it('picks distinct ports from the range, each free once returned', async () => {
    const ports = await freePorts(5, [20_000, 20_009]);
    assert.equal(new Set(ports).size, 5);
    for (const port of ports) {
      assert.ok(port >= 20_000 && port <= 20_009, `${port}`);
      const server = createServer().listen(port, '127.0.0.1');
      await once(server, 'listening');
      server.close();
    }
  });

  it('never returns a port someone listens on', async () => {
    const holder = createServer().listen(20_010, '127.0.0.1');
    await once(holder, 'listening');
    try {
      assert.deepEqual(await freePorts(1, [20_010, 20_011]), [20_011]);
    } finally {
      holder.close();
    }
  });

  it("lets the kernel pick when asked: a port in the kernel's ephemeral range", async () => {
    const [port] = await freePorts(1, 'kernel');
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number) as [number, number];
    assert.ok(port !== undefined && port >= low && port <= high, `${port}`);
  });
});
