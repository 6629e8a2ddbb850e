import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runBench } from '../bench/bench.js';
import { fanoutSummary, runFanoutBench } from '../bench/fanout.js';
import { runFreshnessBench } from '../bench/freshness.js';
import { runWatchScaleBench } from '../bench/watchScale.js';

export async function runBenchCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', default: '5' },
      'round-ms': { type: 'string', default: '2000' },
      concurrency: { type: 'string', default: '8' },
      'in-flight': { type: 'string', default: '8,64' },
      protocol: { type: 'string', default: 'h2' },
      'convergence-samples': { type: 'string', default: '30' },
      'convergence-cap-ms': { type: 'string', default: '60000' },
      'changed-samples': { type: 'string', default: '30' },
      only: { type: 'string' },
      'fanout-nodes': { type: 'string', default: '200' },
      'fanout-changes': { type: 'string', default: '30' },
      'fanout-crds': { type: 'string', default: '2000' },
      'fanout-crd-groups': { type: 'string', default: '200' },
      samples: { type: 'string', default: '30' },
      'freshness-cap-ms': { type: 'string', default: '15000' },
      'freshness-crds': { type: 'string', default: '2000' },
      'envoy-concurrency': { type: 'string', default: '2,16' },
      'watch-nodes': { type: 'string', default: '2000' },
      'watch-h2-watches': { type: 'string', default: '9' },
      'watch-writes-per-second': { type: 'string', default: '40' },
      'watch-seconds': { type: 'string', default: '60' },
      out: { type: 'string' },
    },
    strict: true,
  });
  const int = (name: string, text: string | undefined): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    return n;
  };
  const protocol = values.protocol;
  if (protocol !== 'h2' && protocol !== 'http/1.1') throw new Error('--protocol must be h2 or http/1.1');
  const inFlight = (values['in-flight'] ?? '').split(',').map((n) => int('in-flight', n));
  const progress = (line: string): void => {
    process.stderr.write(`[bench] ${line}\n`);
  };
  const fanout = {
    nodes: int('fanout-nodes', values['fanout-nodes']),
    changes: int('fanout-changes', values['fanout-changes']),
    crds: Number(values['fanout-crds']),
    crdGroups: int('fanout-crd-groups', values['fanout-crd-groups']),
  };
  if (!Number.isInteger(fanout.crds) || fanout.crds < 0) throw new Error('--fanout-crds must be a whole number');
  const parts = ['side-by-side', 'fanout', 'convergence', 'discovery', 'freshness', 'watch-scale'] as const;
  const only = parts.find((part) => part === values.only);
  if (values.only !== undefined && only === undefined) throw new Error(`--only takes one part: ${parts.join(', ')}`);
  const figures =
    only === 'watch-scale'
      ? await runWatchScaleBench({
          nodes: int('watch-nodes', values['watch-nodes']),
          watchesPerH2Node: int('watch-h2-watches', values['watch-h2-watches']),
          writesPerSecond: int('watch-writes-per-second', values['watch-writes-per-second']),
          writeSeconds: int('watch-seconds', values['watch-seconds']),
          progress,
        })
      : only === 'fanout'
        ? await runFanoutBench({ ...fanout, progress }).then((f) => ({ summary: fanoutSummary(f), fanout: f }))
        : only === 'freshness'
          ? await runFreshnessBench({
              samples: int('samples', values.samples),
              capMs: int('freshness-cap-ms', values['freshness-cap-ms']),
              crds: int('freshness-crds', values['freshness-crds']),
              crdGroups: fanout.crdGroups,
              envoyConcurrencies: (values['envoy-concurrency'] ?? '').split(',').map((n) => int('envoy-concurrency', n)),
              progress,
            })
          : await runBench({
              rounds: int('rounds', values.rounds),
              roundMs: int('round-ms', values['round-ms']),
              concurrency: int('concurrency', values.concurrency),
              inFlight,
              protocol,
              convergenceSamples: int('convergence-samples', values['convergence-samples']),
              convergenceCapMs: int('convergence-cap-ms', values['convergence-cap-ms']),
              changedSamples: int('changed-samples', values['changed-samples']),
              fanout,
              ...(only === undefined ? {} : { only }),
              progress,
            });
  const text = `${JSON.stringify(figures, null, 2)}\n`;
  if (values.out !== undefined) writeFileSync(values.out, text);
  process.stdout.write(text);
  return 0;
}
