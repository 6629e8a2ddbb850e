import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { legacyDiscoveryClientPaths, requiredVersion, sourceDigest } from '../../../../src/tools/install/legacyDiscoveryClient.js';
import { repoFile } from '../../../../src/util/protoRoot.js';

describe('legacy discovery client install', () => {
  it('reads the client-go version a go.mod requires, in a block or on one line', () => {
    const block = 'module m\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/apimachinery v0.37.2\n\tk8s.io/client-go v0.37.2 // pinned\n)\n';
    assert.equal(requiredVersion(block, 'k8s.io/client-go'), 'v0.37.2');
    assert.equal(requiredVersion('module m\nrequire k8s.io/client-go v0.36.3\n', 'k8s.io/client-go'), 'v0.36.3');
    assert.equal(requiredVersion('module m\nrequire k8s.io/client-go-extra v1.0.0\n', 'k8s.io/client-go'), undefined);
  });

  it("the repository's go.mod pins k8s.io/client-go to the newer Kubernetes release the install cache builds", () => {
    const goMod = fs.readFileSync(repoFile(path.join('test', 'support', 'legacy-discovery', 'go.mod')), 'utf8');
    assert.equal(requiredVersion(goMod, 'k8s.io/client-go'), 'v0.37.2');
  });

  it('the source digest changes with any file, its name or its bytes, and not otherwise', () => {
    const goMod = { name: 'go.mod', content: 'module m' };
    const digest = sourceDigest([{ name: 'main.go', content: 'package main' }, goMod]);
    assert.match(digest, /^[0-9a-f]{12}$/);
    assert.equal(sourceDigest([{ name: 'main.go', content: 'package main' }, { ...goMod }]), digest);
    assert.notEqual(sourceDigest([{ name: 'main.go', content: 'package main ' }, goMod]), digest);
    assert.notEqual(sourceDigest([{ name: 'other.go', content: 'package main' }, goMod]), digest);
  });

  it('keys the binary and its build workspace under the cache by client-go version and source digest', () => {
    const paths = legacyDiscoveryClientPaths('/c', 'v0.37.2', 'abcdef012345');
    assert.equal(paths.binary, '/c/legacy-discovery/v0.37.2-abcdef012345/legacy-discovery');
    assert.equal(paths.marker, '/c/legacy-discovery/v0.37.2-abcdef012345/.ok');
    assert.equal(paths.workspace, '/c/gobuild/legacy-discovery-v0.37.2-abcdef012345');
  });
});
