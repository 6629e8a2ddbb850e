import { parseArgs } from 'node:util';
import { DEBIAN_PACKAGES, ensureDebianPackages } from '../install/debianPackages.js';
import { ensureComponents, ensureEnvoyOnly, ensureLegacyDiscoveryClientOnly, DEFAULT_KUBERNETES_VERSIONS } from '../install/index.js';

/** What `--only` accepts: Envoy alone is what `npm run test:unit` needs (envoy --mode validate). */
const ONLY = ['envoy'] as const;

export async function runInstall(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { kubernetes: { type: 'string', multiple: true }, only: { type: 'string' } },
    strict: true,
  });
  if (values.only !== undefined && !(ONLY as readonly string[]).includes(values.only)) {
    throw new Error(`--only ${JSON.stringify(values.only)}: expected one of ${ONLY.join(', ')}`);
  }
  if (values.only !== undefined && values.kubernetes !== undefined) {
    throw new Error(`--only ${values.only} installs no Kubernetes release: drop --kubernetes`);
  }
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  const started = Date.now();
  const installed =
    values.only === 'envoy'
      ? { envoy: await ensureEnvoyOnly({ log }) }
      : {
          ...(await ensureComponents({ kubernetesVersions: values.kubernetes ?? [...DEFAULT_KUBERNETES_VERSIONS], log })),
          // client-go in legacy mode, which test/e2e/legacyDiscovery runs through every sidecar.
          legacyDiscoveryClient: await ensureLegacyDiscoveryClientOnly({ log }),
          // System tools from Debian's archive: h2load (bench), prometheus (dashboard test), chromium (status page test).
          debian: await ensureDebianPackages(DEBIAN_PACKAGES, log),
        };
  process.stderr.write(`components ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  process.stdout.write(`${JSON.stringify(installed, null, 2)}\n`);
  return 0;
}
