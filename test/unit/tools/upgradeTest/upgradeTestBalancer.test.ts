// The simulated load balancer against a real HTTPS backend: an entry the
// operator puts back takes traffic again only once its health check has
// passed `rise` times in a row; one that fails `fall` checks leaves.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSandboxPki, type SandboxPki } from '../../../../src/tools/sandbox/pki.js';
import { Balancer } from '../../../../src/tools/upgradeTest/balancer.js';

describe('upgrade test load balancer', () => {
  let dir: string;
  let pki: SandboxPki;
  let server: Server;
  let url: string;
  /** Per entry (the first path segment): whether its /readyz answers 200. */
  const ready: Record<string, boolean> = { a: true, b: true };
  let checks = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mvproxy-balancer-'));
    pki = await ensureSandboxPki(join(dir, 'pki'), { apiserverNames: ['kas-a'] });
    const serving = pki.serving['kas-a'];
    if (!serving) throw new Error('no serving pair');
    server = createServer({ cert: readFileSync(serving.cert), key: readFileSync(serving.key) }, (req, res) => {
      const [, entry, path] = (req.url ?? '').split('/');
      if (path === 'readyz' && entry === 'a') checks++;
      res.writeHead(path === 'readyz' && !ready[entry ?? ''] ? 503 : 200).end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const balancer = (events: Array<[string, boolean, string]>): Balancer =>
    new Balancer(
      [
        { name: 'kas-a', url: `${url}/a` },
        { name: 'kas-b', url: `${url}/b` },
      ],
      { ca: pki.ca.cert, token: 't', cert: pki.admin },
      {
        healthCheck: { path: '/readyz', intervalMs: 40, timeoutMs: 1000, rise: 2, fall: 3 },
        now: () => performance.now(),
        onRotation: (name, inRotation, _t, reason) => events.push([name, inRotation, reason]),
      },
    );

  it('an entry put back takes traffic only after `rise` passing checks made after it was put back', async () => {
    const events: Array<[string, boolean, string]> = [];
    const b = balancer(events);
    try {
      await b.takeOut('kas-a');
      assert.equal(b.pick().name, 'kas-b');
      ready.a = false;
      const back = b.putBack('kas-a');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(b.pick('kas-b').name, 'kas-b', 'failing its checks: still out');
      const before = checks;
      ready.a = true;
      await back;
      assert.ok(checks - before >= 2, `passed ${checks - before} checks`);
      assert.equal(b.pick('kas-b').name, 'kas-a');
      assert.deepEqual(events, [
        ['kas-a', false, 'taken out by the operator'],
        ['kas-a', true, '2 passing checks of /readyz'],
      ]);
    } finally {
      b.close();
    }
  });

  it('an entry in rotation leaves it after `fall` failing checks', async () => {
    const events: Array<[string, boolean, string]> = [];
    ready.a = false;
    ready.b = false;
    const b = balancer(events);
    try {
      // Three failing checks 40 ms apart each; a loaded machine may take longer than 120 ms.
      const deadline = Date.now() + 5000;
      while (events.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(events.map(([name, inRotation]) => [name, inRotation]).sort(), [
        ['kas-a', false],
        ['kas-b', false],
      ]);
      assert.equal(events[0]?.[2], '3 failing checks of /readyz');
      assert.throws(() => b.pick(), /no entry point in rotation/);
    } finally {
      b.close();
      ready.a = true;
      ready.b = true;
    }
  });
});
