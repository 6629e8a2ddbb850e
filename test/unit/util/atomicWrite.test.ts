// One way to replace a file: src/util/atomicWrite.ts.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { tempOwnerPid, tempSiblingPath, writeFileAtomicSync } from '../../../src/util/atomicWrite.js';

const folders: string[] = [];
after(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});
const folder = (): string => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mvproxy-atomic-'));
  folders.push(dir);
  return dir;
};

/** Runs `body` with the process umask set to `mask`, restoring it after. */
async function withUmask<T>(mask: number, body: () => Promise<T> | T): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await body();
  } finally {
    process.umask(previous);
  }
}

const write = async (...args: Parameters<typeof writeFileAtomicSync>): Promise<void> => writeFileAtomicSync(...args);

describe('writeFileAtomicSync', () => {
  it('creates the file with the content, leaving only it in the folder', async () => {
    const dir = folder();
    const file = path.join(dir, 'state.json');
    await write(file, '{"a":1}\n');
    assert.equal(readFileSync(file, 'utf8'), '{"a":1}\n');
    assert.deepEqual(readdirSync(dir), ['state.json']);
  });

  it('replaces an existing file', async () => {
    const dir = folder();
    const file = path.join(dir, 'drains.json');
    writeFileSync(file, 'old content that is longer than the new one');
    await write(file, 'new');
    assert.equal(readFileSync(file, 'utf8'), 'new');
    assert.deepEqual(readdirSync(dir), ['drains.json']);
  });

  it('writes bytes as given', async () => {
    const file = path.join(folder(), 'blob');
    await write(file, Uint8Array.from([0, 1, 2, 255]));
    assert.deepEqual([...readFileSync(file)], [0, 1, 2, 255]);
  });

  it('gives the file exactly the mode asked for, whatever the umask', async () => {
    const dir = folder();
    await withUmask(0o077, () => write(path.join(dir, 'cert'), 'c', { mode: 0o644 }));
    assert.equal(statSync(path.join(dir, 'cert')).mode & 0o777, 0o644);
    await withUmask(0o022, () => write(path.join(dir, 'key'), 'k', { mode: 0o600 }));
    assert.equal(statSync(path.join(dir, 'key')).mode & 0o777, 0o600);
  });

  it('replacing a file gives it the new mode, not the old one', async () => {
    const file = path.join(folder(), 'key');
    writeFileSync(file, 'old', { mode: 0o644 });
    await write(file, 'new', { mode: 0o600 });
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('without a mode, the file gets what a new file gets: 0666 minus the umask', async () => {
    const file = path.join(folder(), 'state.json');
    await withUmask(0o027, () => write(file, '{}'));
    assert.equal(statSync(file).mode & 0o777, 0o640);
  });

  it('fails without leaving a temp file, and keeps the old content', async () => {
    const dir = folder();
    // A non-empty folder cannot be replaced by a file: the rename fails.
    const target = path.join(dir, 'occupied');
    mkdirSync(target);
    writeFileSync(path.join(target, 'inside'), 'x');
    await assert.rejects(write(target, 'content'));
    assert.deepEqual(readdirSync(dir), ['occupied']);
    assert.deepEqual(readdirSync(target), ['inside']);
  });

  it('fails when the folder does not exist (callers create it)', async () => {
    const dir = folder();
    await assert.rejects(write(path.join(dir, 'missing', 'file'), 'content'), { code: 'ENOENT' });
    assert.deepEqual(readdirSync(dir), []);
  });

  it('successive writes of one file leave the last content and no temp file', () => {
    const dir = folder();
    const file = path.join(dir, 'kubeconfig');
    for (let i = 0; i < 20; i++) writeFileAtomicSync(file, `content ${i} `.repeat(1000), { mode: 0o600 });
    assert.equal(readFileSync(file, 'utf8'), 'content 19 '.repeat(1000));
    assert.deepEqual(readdirSync(dir), ['kubeconfig']);
  });
});

describe('temp names', () => {
  it('are unique siblings of the file, whose owner pid can be read back', () => {
    const a = tempSiblingPath('/c/etcd/v3.6.16/etcd', 4242);
    const b = tempSiblingPath('/c/etcd/v3.6.16/etcd', 4242);
    assert.match(a, /^\/c\/etcd\/v3\.6\.16\/\.tmp-etcd-[0-9a-f]{8}-4242$/);
    assert.notEqual(a, b);
    assert.equal(tempOwnerPid(path.basename(a)), 4242);
    assert.equal(tempOwnerPid(path.basename(tempSiblingPath('/c/envoy/1.40.0', 7))), 7);
  });

  it('other names have no owner', () => {
    assert.equal(tempOwnerPid('etcd'), undefined);
    assert.equal(tempOwnerPid('.ok'), undefined);
    assert.equal(tempOwnerPid('.tmp-etcd'), undefined);
  });
});
