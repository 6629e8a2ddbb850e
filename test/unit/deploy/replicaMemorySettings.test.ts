// Every way a replica is run carries the same memory settings
// (REPLICA_NODE_FLAGS and REPLICA_ENV, src/deploy/replica.ts): the sandbox and
// the kubeadm manifests take them from the code; the systemd unit and the
// image are files, checked here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { IMAGE_PROGRAM, REPLICA_ENV, REPLICA_NODE_FLAGS } from '../../../src/deploy/replica.js';
import { repoFile } from '../../../src/util/protoRoot.js';

describe('the replica memory settings', () => {
  it('the systemd unit runs the program with the flags and the environment', () => {
    const unit = readFileSync(repoFile('deploy/mvproxy.service'), 'utf8');
    const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '';
    assert.match(execStart, new RegExp(`node ${REPLICA_NODE_FLAGS.join(' ')} ${IMAGE_PROGRAM} serve `));
    for (const [name, value] of Object.entries(REPLICA_ENV)) assert.match(unit, new RegExp(`^Environment=${name}=${value}$`, 'm'));
  });

  it('the image installs the program where the manifests run it', () => {
    const dockerfile = readFileSync(repoFile('deploy/Dockerfile'), 'utf8');
    assert.ok(dockerfile.includes(`ln -s ${IMAGE_PROGRAM} /usr/local/bin/mvproxy`));
  });
});
