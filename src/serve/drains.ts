// Where drains outlive the control plane: a small JSON file the operator
// names (admin.drainFile). An upgrade takes minutes; a control plane restarted
// meanwhile must not send traffic back to an apiserver about to go down.
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../util/atomicWrite.js';
import { isRecord } from '../util/json.js';

interface DrainFile {
  draining: string[];
}

/** The drained apiservers recorded in `path`; none when it does not exist. Throws on a malformed file. */
export function readDrains(path: string): string[] {
  if (!existsSync(path)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`admin.drainFile ${path}: ${(err as Error).message}; fix or remove it (it lists drained apiservers)`);
  }
  const draining = isRecord(parsed) ? parsed['draining'] : undefined;
  if (!Array.isArray(draining) || !draining.every((n): n is string => typeof n === 'string')) {
    throw new Error(`admin.drainFile ${path}: expected {"draining": ["apiserver name", ...]}; fix or remove it`);
  }
  return draining;
}

/** Replaces the file atomically, so a crash leaves the old list or the new one. */
export function writeDrains(path: string, draining: readonly string[]): void {
  const file: DrainFile = { draining: [...draining] };
  writeFileAtomicSync(path, `${JSON.stringify(file)}\n`, { mode: 0o600 });
}
