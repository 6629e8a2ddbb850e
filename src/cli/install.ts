import { parseArgs } from 'node:util';
import { ensureComponents, DEFAULT_KUBERNETES_VERSIONS } from '../install/index.js';

export async function runInstall(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { kubernetes: { type: 'string', multiple: true } },
    strict: true,
  });
  const versions = values.kubernetes ?? [...DEFAULT_KUBERNETES_VERSIONS];
  const started = Date.now();
  const installed = await ensureComponents({ kubernetesVersions: versions, log: (line) => process.stderr.write(line + '\n') });
  process.stderr.write(`components ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  process.stdout.write(JSON.stringify(installed, null, 2) + '\n');
  return 0;
}
