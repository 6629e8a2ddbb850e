// Finds the repository's proto/ folder and loads .proto files from it into a
// protobufjs root, from src/ (sources) or dist/src/ (compiled) alike.
import protobuf from 'protobufjs';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A file of the repository (e.g. `deploy/rbac.yaml`), found above this module whether it runs from src/ or dist/src/. */
export function repoFile(relativePath: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, relativePath);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find ${relativePath} above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** The repository's proto/ folder (the one holding `marker`, a path inside it). */
export function protoDir(marker: string): string {
  const file = repoFile(join('proto', marker));
  return file.slice(0, file.length - marker.length - 1);
}

/** A protobufjs root that resolves imports against `includeDirs`, in order. */
export function loadProtoRoot(entries: string[], includeDirs: readonly string[]): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin: string, target: string): string => {
    if (target.startsWith('/')) return target;
    for (const dir of includeDirs) {
      const candidate = resolve(dir, target);
      if (existsSync(candidate)) return candidate;
    }
    return target;
  };
  root.loadSync(entries, { keepCase: true });
  root.resolveAll();
  return root;
}
