// The kubeconfigs the sandbox writes (src/tools/sandbox/kubeconfig.ts) are
// read by kubectl: each release's kubectl the installer builds (`npm test`
// installs them before the e2e tests) accepts one and resolves every file it
// names. No sandbox runs; kubectl is here only because the unit tests install
// Envoy alone (a kubectl is a Go build).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { componentPaths, DEFAULT_KUBERNETES_VERSIONS } from '../../src/tools/install/index.js';
import { writeKubeconfig } from '../../src/tools/sandbox/kubeconfig.js';
import { ensureSandboxPki, type SandboxPki } from '../../src/tools/sandbox/pki.js';

const run = promisify(execFile);

describe("the installer's kubectl reads the sandbox's kubeconfigs", () => {
  let root: string;
  let pki: SandboxPki;

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'mvproxy-kubeconfig-'));
    pki = await ensureSandboxPki(path.join(root, 'pki'), { apiserverNames: ['apiserver-a'] });
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  for (const version of DEFAULT_KUBERNETES_VERSIONS) {
    test(`kubectl ${version} accepts a client-certificate kubeconfig and resolves its files`, async () => {
      const kubectl = componentPaths({ kubernetesVersions: [version] }).kubernetes[version]?.kubectl ?? '';
      const file = path.join(root, version, 'admin.kubeconfig');
      await writeKubeconfig(file, { server: 'https://127.0.0.1:6443', caFile: pki.ca.cert, user: { certFile: pki.admin.cert, keyFile: pki.admin.key } });
      // --flatten reads every referenced file, so it also proves the paths resolve.
      const { stdout } = await run(kubectl, ['config', 'view', '--kubeconfig', file, '--minify', '--flatten', '-o', 'json']);
      const view = JSON.parse(stdout) as {
        'current-context': string;
        clusters: Array<{ cluster: Record<string, string> }>;
        users: Array<{ user: Record<string, string> }>;
      };
      const base64 = async (f: string): Promise<string> => (await readFile(f)).toString('base64');
      assert.equal(view['current-context'], 'mvproxy');
      assert.equal(view.clusters[0]?.cluster['certificate-authority-data'], await base64(pki.ca.cert));
      assert.equal(view.users[0]?.user['client-certificate-data'], await base64(pki.admin.cert));
      assert.equal(view.users[0]?.user['client-key-data'], await base64(pki.admin.key));
    });
  }
});
