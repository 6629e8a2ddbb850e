// Renderers of the upgrade test's committed runs (docs/upgrade-test*.json), for docs/upgrade-test.md.
import { type FigureLine, header, line, lookup, type Reader, row } from './figureRegions.js';

/** A count's total, with its value per run when it is not zero and there was more than one run. */
function count(r: Reader, mode: string, key: string): string {
  const total = r.num(['summary', mode, key, 'total']);
  const runs = r.value(['summary', mode, key, 'runs']);
  return total !== 0 && Array.isArray(runs) && runs.length > 1 ? `${total} (${runs.join(', ')})` : String(total);
}

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
const range = (values: readonly number[]): string => {
  const [low, high] = [Math.min(...values), Math.max(...values)];
  return low === high ? String(low) : `${low} to ${high}`;
};
const modes = (r: Reader): string[] => Object.keys(r.value('summary') as object);
const strings = (r: Reader, path: string): string[] => {
  const v = r.value(path);
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new Error(`${path} is not a list of names`);
  return v as string[];
};

/** What a run of the upgrade test was (`procedure`) and the machine's load while it ran. */
function procedure(json: unknown): FigureLine {
  return line(json, (r) => {
    const loads = modes(r).flatMap((mode) => {
      const runs = r.value(['runs', mode]) as { load_average?: { start?: unknown; end?: unknown } }[];
      return runs.flatMap((run) => [Number(run.load_average?.start), Number(run.load_average?.end)]);
    });
    const short = r.value('procedure.short') === true ? ', `--short`' : '';
    return (
      `${r.str('procedure.from')} to ${r.str('procedure.to')} and back, ${strings(r, 'procedure.apiservers').length} apiservers, ` +
      `${plural(r.num('procedure.runs'), 'run')} per mode${short}; load average ${range(loads)} (each run's start and end).`
    );
  });
}

/** Per mode: the claims and the shared invariants, totals over the runs. */
export function upgradeSummary(json: unknown): FigureLine[] {
  const names = line(json, (r) => modes(r).join(',')).text.split(',');
  return [
    procedure(json),
    line(json, () => ''),
    ...header(['mode', 'requests', 'spurious 404', 'incomplete discovery', '5xx', '5xx without `Retry-After`', 'shared invariants broken']),
    ...names.map((mode) =>
      line(json, (r) => {
        const broken = strings(r, 'procedure.invariants')
          .filter((inv) => r.num(['summary', mode, inv, 'total']) !== 0)
          .map((inv) => `\`${inv}\` ${count(r, mode, inv)}`);
        return row([
          `\`${mode}\``,
          String(r.num(['summary', mode, 'requests', 'total'])),
          count(r, mode, 'spurious_404'),
          count(r, mode, 'incomplete_discovery'),
          count(r, mode, 'errors_5xx'),
          count(r, mode, 'errors_5xx_without_retry_after'),
          broken.length === 0 ? 'none' : broken.join(', '),
        ]);
      }),
    ),
  ];
}

/** Per mode: KEP-4020's stories, counted from what the real kube-controller-manager did. */
export function upgradeStories(json: unknown): FigureLine[] {
  const names = line(json, (r) => modes(r).join(',')).text.split(',');
  const stories = ['namespaces_left_with_garbage', 'namespaces_stuck_terminating', 'dependents_wrongly_deleted', 'controller_manager_restarts'];
  return [
    ...header(['mode', 'namespaces left with garbage', 'stuck Terminating', 'dependents wrongly deleted', 'controller-manager restarts']),
    ...names.map((mode) => line(json, (r) => row([`\`${mode}\``, ...stories.map((key) => count(r, mode, key))]))),
  ];
}

/** Where the spurious 404s were, by resource, summed over each mode's runs. */
export function upgradeSpurious404s(json: unknown): FigureLine[] {
  return [
    line(json, (r) => {
      const parts = modes(r).flatMap((mode) => {
        const byResource = new Map<string, number>();
        for (const run of r.value(['runs', mode]) as { spurious_404_by_resource?: Record<string, number> }[])
          for (const [resource, n] of Object.entries(run.spurious_404_by_resource ?? {})) byResource.set(resource, (byResource.get(resource) ?? 0) + n);
        return byResource.size === 0 ? [] : [`\`${mode}\`: ${[...byResource].map(([resource, n]) => `${n} on ${resource}`).join(', ')}`];
      });
      return `Spurious 404s by resource: ${parts.length === 0 ? 'none' : parts.join('; ')}.`;
    }),
  ];
}

const TIMEOUTS = 'ext_proc.mvproxy.message_timeouts';

/** The sidecars' ext_proc timeouts (a document asked of the control plane that did not answer in time), per sidecar and run. */
export function upgradeExtProcTimeouts(json: unknown): FigureLine[] {
  return [
    line(json, (r) => {
      const parts = modes(r).flatMap((mode) => {
        const values = (r.value(['runs', mode]) as { sidecar_counters?: Record<string, Record<string, number>> }[]).flatMap((run) =>
          Object.values(run.sidecar_counters ?? {}).map((counters) => counters[TIMEOUTS] ?? 0),
        );
        return values.length === 0 ? [] : [`\`${mode}\` ${range(values)}`];
      });
      return `\`${TIMEOUTS}\` per sidecar and run: ${parts.length === 0 ? 'no sidecars' : parts.join(', ')}.`;
    }),
  ];
}

/** The timing of the procedure as the run recorded it: the load balancer's health check, the readings, the story's allowance. */
export function upgradeProcedure(json: unknown): FigureLine[] {
  const rows: FigureLine[] = [
    ...header(['procedure', 'value']),
    line(json, (r) =>
      row([
        "the load balancer's health check",
        `\`${r.str('procedure.health_check.path')}\` every ${r.num('procedure.health_check.interval_ms')} ms; in after ${r.num('procedure.health_check.rise')} passing, out after ${r.num('procedure.health_check.fall')} failing`,
      ]),
    ),
    line(json, (r) => row(['served sets read from each apiserver', `every ${r.num('procedure.served_set_reading_interval_ms')} ms`])),
    line(json, (r) => row(["each apiserver's `--shutdown-delay-duration`", `${r.num('procedure.apiserver_shutdown_delay_s')} s`])),
  ];
  const procedure = lookup(json, ['procedure']);
  if (typeof procedure === 'object' && procedure !== null && 'stories' in procedure)
    rows.push(line(json, (r) => row(['the time a story namespace may stay Terminating', `${r.num('procedure.stories.terminating_allowance_s')} s`])));
  return rows;
}
