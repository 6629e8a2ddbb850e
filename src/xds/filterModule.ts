// Where the compiled filter modules are (envoy/filters, AssemblyScript): the
// identity module (the identity filter, fail closed, in its own VM) and the
// document module (the document filters, fail open, in another VM), so a
// trap in document code never touches identity and no response body ever
// enters the identity filter's VM. `npm run build` writes both to
// dist/envoy/, next to this file's compiled output (dist/src/xds/filterModule.js).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Absolute path of the compiled identity module. */
export const IDENTITY_MODULE_PATH: string = fileURLToPath(new URL('../../envoy/identity.wasm', import.meta.url));

/** Absolute path of the compiled document module. */
export const DOCUMENT_MODULE_PATH: string = fileURLToPath(new URL('../../envoy/documents.wasm', import.meta.url));

/** Both compiled modules' bytes (sent inline to the sidecars). */
export interface FilterModules {
  identity: Buffer;
  documents: Buffer;
}

function readModule(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`the filter module ${path} is missing: run npm run build`);
    }
    throw err;
  }
}

/** The compiled modules' bytes. */
export function readFilterModules(): FilterModules {
  return { identity: readModule(IDENTITY_MODULE_PATH), documents: readModule(DOCUMENT_MODULE_PATH) };
}
