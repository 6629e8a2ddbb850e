import { parseArgs } from 'node:util';
import { runBench } from '../bench/bench.js';

export async function runBenchCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: 'string', default: '5' },
      'round-ms': { type: 'string', default: '2000' },
      concurrency: { type: 'string', default: '8' },
      'convergence-samples': { type: 'string', default: '6' },
    },
    strict: true,
  });
  const int = (name: string, text: string | undefined): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    return n;
  };
  const figures = await runBench({
    rounds: int('rounds', values.rounds),
    roundMs: int('round-ms', values['round-ms']),
    concurrency: int('concurrency', values.concurrency),
    convergenceSamples: int('convergence-samples', values['convergence-samples']),
    progress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  return 0;
}
