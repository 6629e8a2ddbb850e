// The replica's watch on the sidecars' certificate files (src/sources/certificateFiles.ts).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { CertificateFiles, fileSha256 } from '../../../src/sources/certificateFiles.js';
import { RELOAD_MARKER } from '../../../src/xds/reloadMarker.js';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function fixture() {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-certfiles-'));
  dirs.push(dir);
  const clientCa = join(dir, 'ca.crt');
  const serving = join(dir, 'apiserver.crt');
  writeFileSync(clientCa, 'ca one\n');
  writeFileSync(serving, 'serving one\n');
  const changes: Array<string | undefined> = [];
  const files = new CertificateFiles({
    files: [clientCa, serving],
    clientCa,
    certificatePollMs: 5000,
    onClientCaChange: (d) => changes.push(d),
    logger: pino({ level: 'silent' }),
  });
  return { dir, clientCa, serving, changes, files };
}

describe('CertificateFiles', () => {
  test('knows the client CA bundle digest from the start', () => {
    const { clientCa, files } = fixture();
    assert.equal(files.clientCaSha256, fileSha256(clientCa));
  });

  test('a file rewritten in place gets a marker renamed into its directory, which Envoy watches', () => {
    const { dir, serving, changes, files } = fixture();
    files.poll();
    assert.equal(existsSync(join(dir, RELOAD_MARKER)), false, 'nothing changed: no marker');
    writeFileSync(serving, 'serving two\n');
    files.poll();
    assert.equal(existsSync(join(dir, RELOAD_MARKER)), true);
    assert.deepEqual(
      readdirSync(dir).filter((name) => name.startsWith('.tmp-')),
      [],
      'the marker is written beside it and renamed, leaving no temp file',
    );
    assert.deepEqual(changes, [], 'not the client CA');
  });

  test('a new client CA bundle, rewritten or renamed into place, reports its digest once', () => {
    const { dir, clientCa, changes, files } = fixture();
    writeFileSync(clientCa, 'ca two\n');
    files.poll();
    files.poll();
    writeFileSync(join(dir, 'next'), 'ca three\n');
    renameSync(join(dir, 'next'), clientCa);
    files.poll();
    assert.deepEqual(changes, [fileSha256(clientCa) === undefined ? undefined : createdDigest('ca two\n'), fileSha256(clientCa)]);
  });

  test('a file missing for a moment changes nothing', () => {
    const { clientCa, changes, files } = fixture();
    rmSync(clientCa);
    files.poll();
    writeFileSync(clientCa, 'ca one\n');
    files.poll();
    assert.deepEqual(changes, [], 'same content as before it went');
  });
});

function createdDigest(content: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-certfiles-digest-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'f'), content);
  return fileSha256(join(dir, 'f'));
}
