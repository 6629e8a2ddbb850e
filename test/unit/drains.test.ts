// Drains outlive the control plane in admin.drainFile.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readDrains, writeDrains } from '../../src/serve/drains.js';

const folder = (): string => mkdtempSync(join(tmpdir(), 'mvproxy-drains-'));

describe('drain file', () => {
  it('a missing file means nothing is drained', () => {
    assert.deepEqual(readDrains(join(folder(), 'drains.json')), []);
  });

  it('what is written is read back', () => {
    const path = join(folder(), 'drains.json');
    writeDrains(path, ['kas-a', 'kas-c']);
    assert.deepEqual(readDrains(path), ['kas-a', 'kas-c']);
  });

  it('the file is readable by its owner only', () => {
    const path = join(folder(), 'drains.json');
    writeDrains(path, ['kas-a']);
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  it('a file that is not JSON is an error naming the file, not an empty list', () => {
    const path = join(folder(), 'drains.json');
    writeFileSync(path, '{"draining": [');
    assert.throws(
      () => readDrains(path),
      (err: Error) => err.message.includes(path) && /fix or remove it/.test(err.message),
    );
  });

  it('JSON of the wrong shape is an error, not an empty list', () => {
    const path = join(folder(), 'drains.json');
    writeFileSync(path, JSON.stringify({ draining: 'kas-a' }));
    assert.throws(() => readDrains(path), /expected \{"draining"/);
  });
});
