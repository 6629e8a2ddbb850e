// Renderers of the upgrade test's committed runs (docs/upgrade-test*.json), for docs/upgrade-test.md.
import { type FigureLine, fixed, header, line, lookup, type Reader, row } from './figureRegions.js';

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

/** Per mode: the claims and the shared invariants, totals over the runs; then every answer by class and code. */
export function upgradeSummary(json: unknown): FigureLine[] {
  const names = line(json, (r) => modes(r).join(',')).text.split(',');
  return [
    procedure(json),
    line(json, () => ''),
    ...header(['mode', 'requests', 'spurious 404', 'incomplete discovery', '5xx', '5xx while served', '5xx without `Retry-After`', 'shared invariants broken']),
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
          count(r, mode, 'errors_5xx_while_served'),
          count(r, mode, 'errors_5xx_without_retry_after'),
          broken.length === 0 ? 'none' : broken.join(', '),
        ]);
      }),
    ),
    line(json, () => ''),
    ...upgradeAnswers(json),
  ];
}

/** One run's answers by class and code; undefined when the run predates them (it must not read as 0). */
type RunAnswers = Readonly<Record<string, number>> | undefined;

/** `value` as counts per answer class (outcomes.ts answersByClass); undefined when absent; an error naming `where` when it is anything else. */
function answerCounts(value: unknown, where: string): RunAnswers {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Object.values(value).some((n) => typeof n !== 'number'))
    throw new Error(`${where} is not a count per answer class`);
  return value as Record<string, number>;
}

function runAnswers(r: Reader, mode: string): RunAnswers[] {
  return runsOf(r, mode).map((run, i) => answerCounts(run.answers, `runs.${mode}.${i}.answers`));
}

function runsOf(r: Reader, mode: string): Record<string, unknown>[] {
  const runs = r.value(['runs', mode]);
  if (!Array.isArray(runs) || runs.some((run) => typeof run !== 'object' || run === null)) throw new Error(`runs.${mode} is not a list of runs`);
  return runs as Record<string, unknown>[];
}

/** Where an answer class (outcomes.ts answerClass) sorts: by code, 2xx first, a 5xx with `Retry-After` before the same without, transport errors last. */
function answerRank(answer: string): [number, number] {
  if (answer === '2xx') return [200, 0];
  if (answer === 'transport error') return [1000, 0];
  const code = /^(\d{3})(?: (with|without) Retry-After)?$/.exec(answer);
  return code ? [Number(code[1]), code[2] === 'without' ? 1 : 0] : [999, 0];
}

/** The columns of the answers table: every class seen in any run, in answerRank order (then by name). */
export function answerColumns(classes: Iterable<string>): string[] {
  return [...new Set(classes)].sort((a, b) => {
    const [ra, rb] = [answerRank(a), answerRank(b)];
    return ra[0] - rb[0] || ra[1] - rb[1] || (a < b ? -1 : a > b ? 1 : 0);
  });
}

const NOT_RECORDED = 'not recorded';

/** One class's cell: the total, with each run's value when there were several and the total is not 0; a run without answers is named, never summed. */
export function answerCell(runs: readonly RunAnswers[], answer: string): string {
  if (runs.every((answers) => answers === undefined)) return NOT_RECORDED;
  const values = runs.map((answers) => (answers === undefined ? undefined : (answers[answer] ?? 0)));
  if (values.some((v) => v === undefined)) return values.map((v) => v ?? NOT_RECORDED).join(', ');
  const total = (values as number[]).reduce((a, b) => a + b, 0);
  return total !== 0 && values.length > 1 ? `${total} (${values.join(', ')})` : String(total);
}

/** An answer class as a column's heading. */
const classHeading = (answer: string): string => answer.replace('Retry-After', '`Retry-After`');

/** Per mode: every answer counted by class and code (each run's `answers`), so the 5xx stand beside the 404s. */
export function upgradeAnswers(json: unknown): FigureLine[] {
  const names = line(json, (r) => modes(r).join(',')).text.split(',');
  const everyRun = (r: Reader): RunAnswers[] => names.flatMap((mode) => runAnswers(r, mode));
  if (line(json, (r) => String(everyRun(r).every((answers) => answers === undefined))).text === 'true')
    return [fixed(`Answers by class and code: ${NOT_RECORDED} in these runs (they predate each run's \`answers\`).`)];
  const classes = line(json, (r) => answerColumns(everyRun(r).flatMap((answers) => Object.keys(answers ?? {}))).join('\n'));
  const columns = classes.text.split('\n').filter((answer) => answer !== '');
  const heading = ['mode', ...columns.map(classHeading)];
  return [
    fixed("Every answer, by class and code (each run's `answers`):"),
    fixed(''),
    { text: row(heading), from: classes.from },
    fixed(row(heading.map(() => '---'))),
    ...names.map((mode) => line(json, (r) => row([`\`${mode}\``, ...columns.map((answer) => answerCell(runAnswers(r, mode), answer))]))),
  ];
}

/** How long a story's namespace stayed after its DELETE: seconds, null when still there at the judgement, undefined when not recorded. */
type Stayed = number | null | undefined;

function stayedPerRun(r: Reader, mode: string, story: string): Stayed[] {
  return runsOf(r, mode).map((run) => {
    const terminating = (run.stories as { terminating_s?: Record<string, unknown> } | undefined)?.terminating_s;
    const value = terminating?.[story];
    return typeof value === 'number' || value === null ? value : undefined;
  });
}

/** One story's cell: each run's time, e.g. `12, 15, 11 s`; `still there` when it had not gone at the judgement; `not recorded` for runs that predate it. */
export function stayedCell(values: readonly Stayed[]): string {
  if (values.every((v) => v === undefined)) return NOT_RECORDED;
  if (values.every((v) => typeof v === 'number')) return `${values.join(', ')} s`;
  return values.map((v) => (v === undefined ? NOT_RECORDED : v === null ? 'still there' : `${v} s`)).join(', ');
}

/** The stories' names as each run's `stories.terminating_s` keys them (the renderers read the JSON, never the test's code). */
const STORIES = ['every apiserver up', 'sole server restarting'] as const;

/** Per mode: KEP-4020's stories, counted from what the real kube-controller-manager did, and how long each story's namespace stayed. */
export function upgradeStories(json: unknown): FigureLine[] {
  const names = line(json, (r) => modes(r).join(',')).text.split(',');
  const stories = ['namespaces_left_with_garbage', 'namespaces_stuck_terminating', 'dependents_wrongly_deleted'];
  return [
    ...header([
      'mode',
      'namespaces left with garbage',
      'stuck Terminating',
      'dependents wrongly deleted',
      ...STORIES.map((story) => `Terminating for (${story})`),
      'controller-manager restarts',
    ]),
    ...names.map((mode) =>
      line(json, (r) =>
        row([
          `\`${mode}\``,
          ...stories.map((key) => count(r, mode, key)),
          ...STORIES.map((story) => stayedCell(stayedPerRun(r, mode, story))),
          count(r, mode, 'controller_manager_restarts'),
        ]),
      ),
    ),
  ];
}

/** Per mode: the pods' part of the load (each run's `in_cluster`), their answers summed over the runs; `not recorded` for runs that predate it. */
export function upgradeInCluster(json: unknown): FigureLine[] {
  return [
    line(json, (r) => {
      const parts = modes(r).map((mode) => {
        const answers = new Map<string, number>();
        let requests = 0;
        for (const [i, run] of runsOf(r, mode).entries()) {
          const pods = run.in_cluster as { requests?: unknown; answers?: unknown } | undefined;
          if (typeof pods?.requests !== 'number') return `\`${mode}\`: ${NOT_RECORDED}`;
          requests += pods.requests;
          const counts = answerCounts(pods.answers, `runs.${mode}.${i}.in_cluster.answers`) ?? {};
          for (const [answer, n] of Object.entries(counts)) answers.set(answer, (answers.get(answer) ?? 0) + n);
        }
        return `\`${mode}\`: ${requests} (${answerColumns(answers.keys())
          .map((answer) => `${answer} ${answers.get(answer)}`)
          .join(', ')})`;
      });
      return `Pods' requests through the \`kubernetes\` Service, by answer: ${parts.join('; ')}.`;
    }),
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
