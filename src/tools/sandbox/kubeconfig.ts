// Kubeconfig files for the sandbox's clients (kubectl, @kubernetes/client-node).
// The output is JSON: JSON is valid YAML, kubectl and client-node read it,
// and JSON.stringify quotes every path and token correctly.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomicSync } from '../../util/atomicWrite.js';
import type { SandboxPki } from './pki.js';
import type { SandboxApiserverState } from './state.js';

export type KubeconfigUser = { certFile: string; keyFile: string } | { token: string };

export interface KubeconfigOptions {
  /** Apiserver (or Envoy sidecar) URL, e.g. https://127.0.0.1:6443. */
  server: string;
  /** CA that signed the server's certificate. Paths are written as given: pass absolute ones. */
  caFile: string;
  user: KubeconfigUser;
  /** Name of the cluster, user and context entries (default "mvproxy"). */
  name?: string;
  /** Name to verify the server certificate against when `server` is an address it does not list. */
  tlsServerName?: string;
}

const DEFAULT_KUBECONFIG_NAME = 'mvproxy';

/** A complete kubeconfig (one cluster, user and context, all named `name`), as JSON text. */
export function kubeconfigYaml(opts: KubeconfigOptions): string {
  const name = opts.name ?? DEFAULT_KUBECONFIG_NAME;
  const cluster: Record<string, string> = {
    server: opts.server,
    'certificate-authority': opts.caFile,
  };
  if (opts.tlsServerName !== undefined) cluster['tls-server-name'] = opts.tlsServerName;
  const user: Record<string, string> =
    'token' in opts.user ? { token: opts.user.token } : { 'client-certificate': opts.user.certFile, 'client-key': opts.user.keyFile };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** Write the kubeconfig with mode 0600 (it may hold a bearer token), atomically. */
export async function writeKubeconfig(file: string, opts: KubeconfigOptions): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, kubeconfigYaml(opts), { mode: 0o600 });
}

/** The admin certificate's kubeconfigs of every apiserver in the state: direct, and through its sidecar when it has one. */
export async function writeApiserverKubeconfigs(apiservers: readonly SandboxApiserverState[], pki: SandboxPki): Promise<void> {
  for (const a of apiservers) {
    await writeKubeconfig(a.kubeconfig.direct, {
      server: a.direct,
      caFile: pki.ca.cert,
      user: { certFile: pki.admin.cert, keyFile: pki.admin.key },
      name: a.name,
    });
    // Through the sidecar the admin certificate keeps its identity (the identity filter sets X-Remote-User/Group).
    if (a.sidecar && a.kubeconfig.sidecar) {
      await writeKubeconfig(a.kubeconfig.sidecar, {
        server: a.sidecar,
        caFile: pki.ca.cert,
        user: { certFile: pki.admin.cert, keyFile: pki.admin.key },
        name: a.name,
      });
    }
  }
}
