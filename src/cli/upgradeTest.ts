// `mvproxy upgrade-test --out FILE [--mode none|upstream|mvproxy|all] [--svg FILE] [--short]`:
// upgrades three apiservers and rolls them back under load in each mode,
// writes the counts as JSON and the picture as SVG.
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureComponents } from '../install/index.js';
import { SANDBOX_MODES, type SandboxMode } from '../sandbox/options.js';
import { renderSvg, type ChartBand } from '../upgradeTest/chart.js';
import type { ModeOutcome } from '../upgradeTest/outcomes.js';
import { NEW_VERSION, OLD_VERSION, runMode } from '../upgradeTest/run.js';

/** The order the modes run in and appear in the JSON and the picture: the problem, upstream's fix, ours. */
const ORDER: SandboxMode[] = ['none', 'upstream', 'mvproxy'];

export async function runUpgradeTestCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      out: { type: 'string' },
      mode: { type: 'string', default: 'all' },
      svg: { type: 'string' },
      short: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.out) throw new Error('upgrade-test: --out FILE is required');
  const modes = values.mode === 'all' ? ORDER : [values.mode as SandboxMode];
  if (!modes.every((m) => (SANDBOX_MODES as readonly string[]).includes(m))) throw new Error(`--mode: none, upstream, mvproxy or all, got ${values.mode}`);
  const progress = (line: string): void => {
    process.stderr.write(`[upgrade-test] ${line}\n`);
  };
  const components = await ensureComponents({ kubernetesVersions: [OLD_VERSION, NEW_VERSION], log: progress });
  const results: Partial<Record<SandboxMode, ModeOutcome>> = {};
  const bands: ChartBand[] = [];
  for (const mode of modes) {
    const { outcome, band } = await runMode(mode, { components, short: values.short, progress });
    results[mode] = outcome;
    bands.push(band);
  }
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(results, null, 2)}\n`);
  const svgPath = values.svg ?? values.out.replace(/(\.json)?$/, '.svg');
  writeFileSync(svgPath, await renderSvg(bands));
  progress(`wrote ${values.out} and ${svgPath}`);
  process.stdout.write(`${JSON.stringify(summaryTable(results), null, 2)}\n`);
  return 0;
}

/** The keys only, per mode: what a reader compares first. */
function summaryTable(results: Partial<Record<SandboxMode, ModeOutcome>>): Record<string, Record<string, number>> {
  const keys = [
    'spurious_404',
    'lost_writes',
    'missed_watch_events',
    'errors_5xx',
    'errors_5xx_without_retry_after',
    'incomplete_discovery',
    'requests',
  ] as const;
  return Object.fromEntries(Object.entries(results).map(([mode, o]) => [mode, Object.fromEntries(keys.map((k) => [k, o[k]]))]));
}
