// The identity filter: its plugin configuration (header names) and plugin and stream contexts.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { credentialId } from '../../support/clientCerts.js';
import { BASE, leaf, newHost, outcome, values, withCert } from '../../support/identityFilterHarness.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';

describe('plugin configuration', () => {
  test('empty configuration and {} mean the defaults', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    for (const configuration of ['', '{}', ' { } ']) {
      const host = newHost({ configuration });
      assert.equal(host.configured, true, configuration);
      assert.deepEqual(outcome(host.request(withCert(cert.certPem))), { kind: 'identity', user: 'alice', groups: ['g'] });
    }
  });

  test('custom header names are honoured, and also stripped from client requests', async () => {
    const cert = await leaf({ name: [{ O: ['g1'] }, { O: ['g2'] }, { CN: ['alice'] }], uid: ['u-1'] });
    const host = newHost({
      configuration: '{"userHeader":"X-Auth-User","uidHeader":"x-auth-uid","groupHeader":"X-Auth-Group","extraHeaderPrefix":"X-Auth-Extra-"}',
    });
    assert.equal(host.configured, true);
    const forged: HeaderList = [
      ['X-Auth-User', 'root'],
      ['x-auth-group', 'system:masters'],
      ['X-AUTH-UID', '0'],
      ['X-Auth-Extra-Scopes', 'all'],
      ['X-Remote-User', 'root'],
    ];
    const result = host.request(withCert(cert.certPem, forged));
    assert.deepEqual(result.headers.slice(BASE.length), [
      ['x-auth-user', 'alice'],
      ['x-auth-uid', 'u-1'],
      ['x-auth-group', 'g1'],
      ['x-auth-group', 'g2'],
      ['x-auth-extra-authentication.kubernetes.io%2fcredential-id', credentialId(cert.certPem)],
    ]);
    const bare = host.request([...BASE, ...forged]);
    assert.deepEqual(bare.headers, BASE);
  });

  test('a partial configuration keeps the defaults for the other keys', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    const host = newHost({ configuration: '{"userHeader":"x-user"}' });
    const result = host.request(withCert(cert.certPem));
    assert.deepEqual(values(result, 'x-user'), ['alice']);
    assert.deepEqual(values(result, 'x-remote-group'), ['g']);
  });

  test('malformed configuration is refused (Envoy then rejects the filter configuration)', () => {
    for (const configuration of [
      'garbage',
      ' ',
      '[]',
      '{',
      '{"userHeader":"x-user"',
      '{"userHeader":"x-user",}',
      '{"userHeader":"x-user"} x',
      '{"unknown":"x"}',
      '{"userHeader":1}',
      '{"userHeader":null}',
      '{"userHeader":["x"]}',
      '{"userHeader":"x-a","userHeader":"x-b"}',
      '{"userHeader":""}',
      '{"userHeader":"x user"}',
      '{"userHeader":"x:user"}',
      '{"groupHeader":"x-gr\\u00e9"}',
      "{'userHeader':'x'}",
      '{"userHeader":"x\n"}',
    ]) {
      assert.equal(newHost({ configuration }).configured, false, JSON.stringify(configuration));
    }
  });

  test('a refused configuration is logged with its reason', () => {
    const host = newHost({ configuration: '{"userHeadr":"x"}' });
    assert.match(host.warnings().join('\n'), /unknown key userHeadr/);
  });

  test('garbage configurations never crash the filter', () => {
    const pieces = ['{', '}', '"', ':', ',', '\\', '\\u', '00', 'userHeader', 'x-a', ' ', '[', '1', 'null', '\u00e9', '\u0000'];
    const host = newHost();
    let seed = 5;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      let config = '';
      for (let n = random(12); n >= 0; n--) config += pieces[random(pieces.length)];
      if (host.configure(config)) accepted++;
    }
    assert.ok(accepted < 3000);
    assert.equal(host.configure('{}'), true);
    assert.equal(host.request(BASE).action, 'continue');
  });

  test('JSON escapes in values are decoded', () => {
    assert.equal(newHost({ configuration: '{"userHeader":"x-\\u0075ser"}' }).configured, true);
  });
});

describe('plugin and stream contexts', () => {
  test("each stream uses its own plugin context's configuration, with thousands of streams open at once", async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const host = newHost({ configuration: '{"userHeader":"x-user-a"}' });
    const rootA = host.pluginContextId;
    const rootB = host.addPluginContext('{"userHeader":"x-user-b"}');
    const headers = withCert(cert.certPem);
    let seed = 7;
    const shuffle = <T>(items: T[]): T[] => {
      for (let i = items.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        const j = seed % (i + 1);
        [items[i], items[j]] = [items[j] as T, items[i] as T];
      }
      return items;
    };
    for (let wave = 0; wave < 3; wave++) {
      const streams: Array<[number, string]> = [];
      for (let i = 0; i < 3000; i++) {
        const a = (i + wave) % 3 !== 0;
        streams.push([host.openStream(a ? rootA : rootB), a ? 'x-user-a' : 'x-user-b']);
      }
      for (const [id, header] of shuffle([...streams])) {
        assert.deepEqual(values(host.sendRequestHeaders(id, headers), header), ['alice'], `stream ${id}`);
      }
      // Close half in random order, check the others still resolve, then close the rest.
      const order = shuffle([...streams]);
      for (const [id] of order.slice(0, 1500)) host.closeStream(id);
      for (const [id, header] of order.slice(1500)) {
        assert.deepEqual(values(host.sendRequestHeaders(id, headers), header), ['alice'], `stream ${id} after deletions`);
        host.closeStream(id);
      }
    }
  });

  test('a refused configuration update leaves the running plugin context as it was', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const host = newHost({ configuration: '{"userHeader":"x-user"}' });
    const stream = host.openStream();
    host.addPluginContext('{"userHeader":1}');
    assert.equal(host.configured, false);
    assert.deepEqual(values(host.sendRequestHeaders(stream, withCert(cert.certPem)), 'x-user'), ['alice']);
    assert.deepEqual(values(host.request(withCert(cert.certPem)), 'x-user'), ['alice']);
  });
});
