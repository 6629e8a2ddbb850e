// Loads the Kubernetes .proto declarations under proto/k8s once (discovery
// documents, their metadata, and the runtime.Unknown envelope).
import protobuf from 'protobufjs';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ENTRIES = ['k8s.io/api/apidiscovery/v2/generated.proto', 'k8s.io/apimachinery/pkg/runtime/generated.proto'];

/** proto/k8s of the repository, from src/discovery (sources) or dist/src/discovery (compiled). */
function k8sProtoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'proto', 'k8s');
    if (existsSync(join(candidate, ENTRIES[0] as string))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find proto/k8s above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export interface KubernetesProtoTypes {
  APIGroupDiscoveryList: protobuf.Type;
  Unknown: protobuf.Type;
}

let types: KubernetesProtoTypes | undefined;

export function kubernetesProtoTypes(): KubernetesProtoTypes {
  if (!types) {
    const base = k8sProtoDir();
    const root = new protobuf.Root();
    // Imports are written as upstream writes them ("k8s.io/..."), relative to proto/k8s.
    root.resolvePath = (_origin: string, target: string): string => (target.startsWith('/') ? target : resolve(base, target));
    root.loadSync(ENTRIES, { keepCase: true });
    root.resolveAll();
    types = {
      APIGroupDiscoveryList: root.lookupType('k8s.io.api.apidiscovery.v2.APIGroupDiscoveryList'),
      Unknown: root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown'),
    };
  }
  return types;
}
