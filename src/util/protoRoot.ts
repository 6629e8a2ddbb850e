// Finds the repository's proto/ folder and loads .proto files from it into a
// protobufjs root, from src/ (sources) or dist/src/ (compiled) alike.
import protobuf from 'protobufjs';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's proto/ folder: the first ancestor of this module that has one holding `marker`. */
export function protoDir(marker: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, marker))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find proto/${marker} above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
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
