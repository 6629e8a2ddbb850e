// `mvproxy serve`: the control plane for a real cluster (the sandbox runs this same command).
import { parseArgs } from 'node:util';
import { loadServeConfig } from '../serve/config.js';
import { ControlPlane } from '../serve/controlPlane.js';
import { createMetrics } from '../metrics.js';
import { createLogger } from '../util/log.js';

export async function runServe(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      'log-level': { type: 'string' },
    },
    strict: true,
  });
  if (!values.config) throw new Error('mvproxy serve needs --config FILE (see docs/operating.md, "Running it")');
  const config = loadServeConfig(values.config);
  const logger = createLogger('mvproxy', values['log-level']);
  const controlPlane = new ControlPlane(config, { logger, metrics: createMetrics({ processMetrics: true }) });
  const listening = await controlPlane.start();
  logger.info({ ...listening, apiservers: config.apiservers.map((a) => a.name) }, 'control plane serving');
  process.stderr.write(
    `mvproxy control plane serving xDS on ${listening.xds.join(', ')}${listening.admin ? `, metrics and status on ${listening.admin}` : ''}${listening.adminSocket ? `, admin API on ${listening.adminSocket}` : ''}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await controlPlane.stop();
  return 0;
}
