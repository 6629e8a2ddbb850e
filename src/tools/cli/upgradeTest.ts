// `mvproxy-dev upgrade-test --out FILE [--pair 1.36-1.37|1.35-1.36] [--mode none|upstream|mvproxy|mvproxy-drain|all] [--runs N] [--svg FILE] [--short]
//   [--controller-manager-node kas-a|kas-b|kas-c]`:
// upgrades three apiservers and rolls them back under load in each mode, N
// times, writes every run's counts and their summary as JSON
// (src/tools/upgradeTest/summary.ts documents its shape) and the picture as SVG.
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureComponents } from '../install/index.js';
import { renderSvg, type ChartBand } from '../upgradeTest/chart.js';
import { HEALTH_CHECK, HEALTH_CHECK_SOURCE } from '../upgradeTest/healthCheck.js';
import { isTestMode, TEST_MODES, type TestMode } from '../upgradeTest/modes.js';
import type { ModeOutcome } from '../upgradeTest/outcomes.js';
import { DEFAULT_PAIR, versionPair, type VersionPair } from '../upgradeTest/pairs.js';
import { APISERVERS, DEFAULT_CONTROLLER_MANAGER_NODE, runMode, SERVED_SET_READING_INTERVAL_MS, SHUTDOWN_DELAY_SECONDS } from '../upgradeTest/run.js';
import { TERMINATING_ALLOWANCE_S } from '../upgradeTest/stories.js';
import { NO_STORY_RESOURCE } from '../upgradeTest/storyJudgement.js';
import { aggregateRuns, answerBreaches, ANSWERS_429_SHARE, breaches, heldTo, INVARIANTS, MVPROXY_CLAIMS } from '../upgradeTest/summary.js';

const MODE_PROCEDURES: Record<TestMode, string> = {
  none: 'the apiservers behind the load balancer, no proxy',
  upstream: "the apiservers behind the load balancer, kube-apiserver's Mixed Version Proxy on",
  mvproxy: 'the sidecars behind the load balancer; nothing else done around a restart',
  'mvproxy-drain': 'the sidecars behind the load balancer; drain --wait before each restart, undrain --wait after it',
};

/** When and how KEP-4020's stories run (src/tools/upgradeTest/stories.ts), or why they do not. */
function storiesProcedure(pair: VersionPair): Record<string, unknown> {
  if (pair.storyResource === undefined) return { resource: null, skipped: NO_STORY_RESOURCE };
  return {
    resource: pair.storyResource,
    when: `after ${APISERVERS[0]}'s upgrade step, before the next: ${APISERVERS[0]} then alone serves the resource`,
    every_apiserver_up: 'a namespace holding two such objects deleted through the load balancer; an owner of the resource with a ConfigMap dependent',
    sole_server_restarting: `the same, then ${APISERVERS[0]} restarted at its version as an operator step, the namespace deleted through the load balancer right after it stopped`,
    terminating_allowance_s: TERMINATING_ALLOWANCE_S,
    judged: `${TERMINATING_ALLOWANCE_S} s after ${APISERVERS[0]} is back in the load balancer, read from it directly`,
  };
}

export async function runUpgradeTestCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      out: { type: 'string' },
      mode: { type: 'string', default: 'all' },
      pair: { type: 'string', default: DEFAULT_PAIR },
      runs: { type: 'string', default: '1' },
      svg: { type: 'string' },
      short: { type: 'boolean', default: false },
      'controller-manager-node': { type: 'string', default: DEFAULT_CONTROLLER_MANAGER_NODE },
    },
    strict: true,
  });
  if (!values.out) throw new Error('upgrade-test: --out FILE is required');
  const mode = values.mode ?? 'all';
  if (mode !== 'all' && !isTestMode(mode)) throw new Error(`--mode: ${TEST_MODES.join(', ')} or all, got ${mode}`);
  const modes: TestMode[] = mode === 'all' ? [...TEST_MODES] : [mode];
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: a whole number from 1, got ${values.runs}`);
  const progress = (line: string): void => {
    process.stderr.write(`[upgrade-test] ${line}\n`);
  };
  const pair = versionPair(values.pair ?? DEFAULT_PAIR);
  const controllerManagerNode = values['controller-manager-node'] ?? DEFAULT_CONTROLLER_MANAGER_NODE;
  if (!APISERVERS.includes(controllerManagerNode)) throw new Error(`--controller-manager-node: one of ${APISERVERS.join(', ')}, got ${controllerManagerNode}`);
  const components = await ensureComponents({ kubernetesVersions: [pair.older, pair.newer], log: progress });
  const results = Object.fromEntries(modes.map((m) => [m, [] as ModeOutcome[]])) as Record<TestMode, ModeOutcome[]>;
  const bands: ChartBand[] = [];
  // Run by run, each mode in turn: whatever drifts on the machine over time falls on every mode alike.
  for (let run = 1; run <= runs; run++) {
    for (const m of modes) {
      progress(`run ${run} of ${runs}, mode ${m}`);
      const { outcome, band } = await runMode(m, { components, short: values.short, pair, controllerManagerNode, progress });
      results[m].push(outcome);
      if (run === 1) bands.push(band);
    }
  }
  const summary = Object.fromEntries(modes.map((m) => [m, aggregateRuns(results[m])]));
  const document = {
    procedure: {
      from: pair.older,
      to: pair.newer,
      pair: pair.id,
      resources: pair.resources,
      skew_resource: pair.skew,
      apiservers: values.short ? APISERVERS.slice(0, 1) : APISERVERS,
      short: values.short,
      runs,
      health_check: {
        path: HEALTH_CHECK.path,
        interval_ms: HEALTH_CHECK.intervalMs,
        timeout_ms: HEALTH_CHECK.timeoutMs,
        rise: HEALTH_CHECK.rise,
        fall: HEALTH_CHECK.fall,
        source: HEALTH_CHECK_SOURCE,
      },
      apiserver_shutdown_delay_s: SHUTDOWN_DELAY_SECONDS,
      served_set_reading_interval_ms: SERVED_SET_READING_INTERVAL_MS,
      modes: Object.fromEntries(modes.map((m) => [m, MODE_PROCEDURES[m]])),
      controller_manager: {
        version: pair.older,
        node: controllerManagerNode,
        endpoint: "the node's own: its sidecar in the mvproxy modes, the apiserver itself in none and upstream",
      },
      stories: storiesProcedure(pair),
      invariants: INVARIANTS,
      mvproxy_claims: MVPROXY_CLAIMS,
      answer_bounds: { '4xx but 404 and 429': 0, '404': 'spurious_404 (above)', '429': `at most ${ANSWERS_429_SHARE * 100} % of the requests` },
    },
    summary,
    runs: results,
  };
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(document, null, 2)}\n`);
  const svgPath = values.svg ?? values.out.replace(/(\.json)?$/, '.svg');
  const subtitle = `apiservers ${pair.older} -> ${pair.newer} -> ${pair.older}; rules: operator steps${runs > 1 ? `; run 1 of ${runs} per mode` : ''}`;
  writeFileSync(svgPath, await renderSvg(bands, subtitle));
  progress(`wrote ${values.out} and ${svgPath}`);
  for (const m of modes) {
    const broken = results[m].map((o) => ({ ...breaches(o, heldTo(m)), ...(answerBreaches(o).length > 0 ? { answers: answerBreaches(o) } : {}) }));
    progress(`${m}: ${broken.every((b) => Object.keys(b).length === 0) ? 'held' : `broke ${JSON.stringify(broken)}`}`);
  }
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  return 0;
}
