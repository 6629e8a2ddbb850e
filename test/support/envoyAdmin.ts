// A sidecar Envoy's admin interface, as tests read it: JSON answers
// (src/util/envoyAdmin.ts makes the request).
import { envoyAdminGet } from '../../src/util/envoyAdmin.js';

/** An admin endpoint's JSON answer. */
export async function envoyAdminJson<T>(socketPath: string, path: string): Promise<T> {
  return JSON.parse(await envoyAdminGet(socketPath, path)) as T;
}
