// What a newcomer can try once the sandbox is up (`npm start` ends with it).
// Pure: from the state file.
import type { SandboxState } from './state.js';

/** storagemigration.k8s.io/v1 is served from v1.37 on: the sandbox's example of skew. */
function servesStorageMigration(version: string): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(version);
  return m !== null && (Number(m[1]) > 1 || Number(m[2]) >= 37);
}

export function nextSteps(state: SandboxState, { detached }: { detached: boolean }): string {
  const lines: string[] = ['', 'Try:'];
  const older = state.apiservers.find((a) => !servesStorageMigration(a.version));
  const newer = state.apiservers.find((a) => servesStorageMigration(a.version));
  const entry = older ?? state.apiservers[0];
  if (entry) {
    const kubeconfig = entry.kubeconfig.sidecar ?? entry.kubeconfig.direct;
    const through = entry.kubeconfig.sidecar ? `${entry.name}'s sidecar` : `${entry.name} directly`;
    const what = older && newer ? 'storageversionmigrations' : 'namespaces';
    lines.push(`  ${state.kubectl} --kubeconfig ${kubeconfig} get ${what}`);
    if (older && newer) {
      const outcome =
        state.mode === 'none'
          ? `a 404: only ${newer.name} (${newer.version}) serves them, and mode none has no proxy`
          : `served by ${newer.name} (${newer.version}), through ${through} (${older.version})`;
      lines.push(`      ${outcome}`);
    }
  }
  const replica = state.controlPlane;
  if (replica) {
    lines.push(`  npx mvproxy admin status                  what the control plane sees (also: explain, drain, config)`);
    lines.push(`  ${replica.admin}/                 the status page (${replica.admin}/metrics for Prometheus)`);
  }
  const network = state.network;
  if (network?.mode === 'namespace' && entry) {
    const kubeconfig = entry.kubeconfig.sidecar ?? entry.kubeconfig.direct;
    lines.push(`  ${state.kubectl} --kubeconfig ${kubeconfig} -n default get endpointslices,endpoints kubernetes`);
    lines.push('      every live sidecar at its node address, port 6443: what pods are sent to');
    if (network.enter) lines.push(`  ${network.enter} sh          a shell in the sandbox's network namespace`);
  }
  lines.push(detached ? '  npx mvproxy-dev sandbox down              stop the sandbox' : 'Ctrl-C stops the sandbox.');
  return `${lines.join('\n')}\n`;
}
