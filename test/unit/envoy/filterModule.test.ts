// The filter modules (the identity module and the document module, two VMs): their ABI and paths, and the identity filter's memory under load.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { DOCUMENT_MODULE_PATH, IDENTITY_MODULE_PATH } from '../../../src/xds/filterModule.js';
import { certificateDer } from '../../support/clientCerts.js';
import { documentModule, filterModule, leaf, newHost, values, withXfcc, xfccOfDer } from '../../support/identityFilterHarness.js';

let wasm: Buffer;

before(() => {
  wasm = filterModule();
});

describe('module', () => {
  test('imports only proxy-wasm host functions and exports the ABI 0.2.1 entry points', () => {
    const mod = new WebAssembly.Module(Uint8Array.from(wasm));
    for (const imp of WebAssembly.Module.imports(mod)) {
      assert.equal(imp.module, 'env');
      assert.match(imp.name, /^proxy_/);
    }
    const exports = WebAssembly.Module.exports(mod).map((e) => e.name);
    for (const name of ['proxy_abi_version_0_2_1', 'proxy_on_memory_allocate', 'malloc', '_initialize', 'proxy_on_request_headers']) {
      assert.ok(exports.includes(name), name);
    }
  });

  test('the module paths are the compiled modules', () => {
    assert.match(IDENTITY_MODULE_PATH, /dist\/envoy\/identity\.wasm$/);
    assert.match(DOCUMENT_MODULE_PATH, /dist\/envoy\/documents\.wasm$/);
  });

  test('the identity module exports no response callback, so no response header or body ever enters its VM', () => {
    const exports = WebAssembly.Module.exports(new WebAssembly.Module(Uint8Array.from(wasm))).map((e) => e.name);
    assert.deepEqual(
      exports.filter((name) => name.startsWith('proxy_on_response')),
      [],
    );
  });

  test('the document module exports the response headers and body callbacks', () => {
    const exports = WebAssembly.Module.exports(new WebAssembly.Module(Uint8Array.from(documentModule()))).map((e) => e.name);
    assert.ok(exports.includes('proxy_on_response_headers'));
    assert.ok(exports.includes('proxy_on_response_body'));
  });

  test('memory stops growing: misses over many distinct certificates and cache hits, with eviction', async () => {
    const template = certificateDer((await leaf({ name: [{ O: ['system:authenticated'] }, { O: ['team'] }, { CN: ['user'] }], uid: ['uid-1'] })).certPem);
    // Distinct certificates without signing each: rewrite the serial number
    // (the filter never checks signatures; Envoy did).
    const serialAt = template.indexOf(Buffer.from([0x02, 0x10]), 4) + 2;
    let serial = 0;
    const distinct = (count: number): string[] => {
      const out: string[] = [];
      for (let i = 0; i < count; i++) {
        const der = Buffer.from(template);
        der.writeUInt32BE(0x40000000 + serial++, serialAt);
        out.push(xfccOfDer(der));
      }
      return out;
    };
    const host = newHost();
    const round = (): number => {
      // 20k requests over 2k distinct certificates, then 50k hits on one.
      const xfccs = distinct(2000);
      for (let r = 0; r < 10; r++) for (const x of xfccs) assert.equal(host.request(withXfcc(x)).action, 'continue');
      const hot = withXfcc(xfccs[0] as string);
      for (let i = 0; i < 50_000; i++) host.request(hot);
      return host.memoryBytes();
    };
    // Rounds 1-2 fill the cache (4096 entries); from round 3 every round evicts 2000.
    const sizes = [round(), round(), round(), round(), round()];
    assert.equal(sizes[4], sizes[2], `memory grew: ${sizes.join(', ')}`);
    // 4096 cached certificates at well under 1 KiB each, plus the collector's
    // garbage between collections and the scratch buffers: a few MiB.
    assert.ok((sizes[4] ?? 0) <= 8 * 1024 * 1024, `memory ${sizes.join(', ')}`);
  });

  test('memory stays bounded with certificates whose subjects are huge (the cache has a byte budget)', async () => {
    // A 16 KiB CN: 1500 of them would hold 24 MiB of names if only the entry count bounded the cache.
    const template = certificateDer((await leaf({ name: [{ O: ['g'] }, { CN: ['u'.repeat(16 * 1024)] }] })).certPem);
    const serialAt = template.indexOf(Buffer.from([0x02, 0x10]), 4) + 2;
    const host = newHost();
    const xfccs: string[] = [];
    for (let i = 0; i < 1500; i++) {
      const der = Buffer.from(template);
      der.writeUInt32BE(0x40000000 + i, serialAt);
      xfccs.push(xfccOfDer(der));
    }
    for (let r = 0; r < 2; r++) {
      for (const x of xfccs) assert.equal(values(host.request(withXfcc(x)), 'x-remote-user')[0]?.length, 16 * 1024);
    }
    assert.ok(host.memoryBytes() <= 16 * 1024 * 1024, `memory ${host.memoryBytes()}`);
  });
});
