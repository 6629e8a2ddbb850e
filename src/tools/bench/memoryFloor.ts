// The floor of a replica's memory, for the fan-out bench: a Node process with
// the replica's flags and environment (deploy/replica.ts) that loads what a
// replica loads (loadReplicaModules: the control plane's modules, the
// Kubernetes client, the Envoy API) and then does nothing. What a replica holds beyond it is its
// cluster, its streams and its garbage.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { REPLICA_ENV, REPLICA_NODE_FLAGS } from '../../entry/controlPlane.js';

const SCRIPT = `
await (await import(process.argv[1])).loadReplicaModules();
await new Promise((r) => setTimeout(r, 1000));
const status = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8');
process.stdout.write(/VmHWM:\\s+(\\d+)/.exec(status)[1]);
`;

/** VmHWM of the idle, loaded program, MB (2^20 bytes). */
export async function replicaMemoryFloorMb(): Promise<number> {
  const module = (path: string): string => fileURLToPath(new URL(path, import.meta.url));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [...REPLICA_NODE_FLAGS, '--input-type=module', '-e', SCRIPT, module('../../entry/controlPlane.js')],
      { env: { ...process.env, ...REPLICA_ENV }, cwd: module('.') },
      (err, out) => (err ? reject(err) : resolve(out)),
    );
  });
  return Math.round(Number(stdout) / 1024);
}
