// Where the compiled filter module is: one WebAssembly module (envoy/filters,
// AssemblyScript) holding both of mvproxy's Envoy filters, the identity
// filter and the document filters. `npm run build` writes it to
// dist/envoy/filters.wasm, next to this file's compiled output
// (dist/src/xds/filterModule.js).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Absolute path of the compiled filter module. */
export const FILTER_MODULE_PATH: string = fileURLToPath(new URL('../../envoy/filters.wasm', import.meta.url));

/** The compiled filter module's bytes (to send inline to the sidecars). */
export function readFilterModule(): Buffer {
  try {
    return readFileSync(FILTER_MODULE_PATH);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`the filter module ${FILTER_MODULE_PATH} is missing: run npm run build`);
    }
    throw err;
  }
}
