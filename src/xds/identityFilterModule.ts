// Where the compiled certificate-identity filter (envoy/identity-filter,
// AssemblyScript -> WebAssembly) is: `npm run build` writes it to
// dist/envoy/identity-filter.wasm, next to this module's compiled output
// (dist/src/xds/identityFilterModule.js).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Absolute path of the compiled filter module. */
export const IDENTITY_FILTER_WASM_PATH: string = fileURLToPath(new URL('../../envoy/identity-filter.wasm', import.meta.url));

/** The compiled filter module's bytes (to send inline to the sidecars). */
export function readIdentityFilterModule(): Buffer {
  try {
    return readFileSync(IDENTITY_FILTER_WASM_PATH);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`the identity filter module ${IDENTITY_FILTER_WASM_PATH} is missing: run npm run build`);
    }
    throw err;
  }
}
