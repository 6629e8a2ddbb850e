// `mvproxy admin` with no --socket and no $MVPROXY_ADMIN_SOCKET asks the local
// sandbox's control plane: the product reads the one field it needs of the
// state file the sandbox (a tool) writes, without importing the sandbox.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { localAdminSocket, localSandboxDir } from '../../../src/entry/adminClient.js';
import { type SandboxState, writeState } from '../../../src/tools/sandbox/state.js';

describe('the admin socket of the local sandbox', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-admin-default-'));
  process.env['MVPROXY_SANDBOX_DIR'] = dir;
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is in $MVPROXY_SANDBOX_DIR when set, unless a folder is given', () => {
    assert.equal(localSandboxDir(), dir);
    assert.equal(localSandboxDir('/elsewhere'), '/elsewhere');
  });

  it('is the first control plane named by the state file the sandbox writes', () => {
    const controlPlane = { name: 'mvproxy', admin: 'http://127.0.0.1:1', adminSocket: join(dir, 'admin.sock'), config: '', warmStartFile: '', xdsSocket: '' };
    writeState(join(dir, 'state.json'), { pid: 1, dir, apiservers: [], controlPlane, controlPlanes: [controlPlane] } as unknown as SandboxState);
    assert.equal(localAdminSocket(), join(dir, 'admin.sock'));
  });

  it('is none when the sandbox runs no control plane', () => {
    writeState(join(dir, 'state.json'), { pid: 1, dir, apiservers: [] } as unknown as SandboxState);
    assert.equal(localAdminSocket(), undefined);
  });
});
