// Renderer of the large-cluster watch bench's committed runs (docs/bench-watch-scale.json), for docs/benchmark.md.
import { summaryRatio } from './benchFigures.js';
import { type FigureLine, fixed, header, line, row } from './figureRegions.js';

/** The target: the sidecar's memory and event delay within 1.1x of the minimal Envoy's (the floor). */
export const WATCH_SCALE_TARGET_RATIO = 1.1;

/** One row per side (medians over the runs), then the sidecar over the floor, each ratio against the target. */
export function watchScale(json: unknown): FigureLine[] {
  const sides: [string, string, boolean][] = [
    ['direct', 'direct', false],
    ['the minimal Envoy', 'minimal', true],
    ['the sidecar', 'sidecar', true],
  ];
  const ratios: [string, string][] = [
    ['memory per connection', 'memory_per_connection_vs_minimal_envoy'],
    ['memory per extra watch', 'memory_per_extra_watch_vs_minimal_envoy'],
    ['event delay, p50', 'delay_p50_vs_minimal_envoy'],
    ['event delay, p99', 'delay_p99_vs_minimal_envoy'],
  ];
  return [
    line(
      json,
      (r) =>
        `${r.num('summary.watch_scale_connections')} connections, ${r.num('summary.watch_scale_watches')} watches, ${r.num('watchScale.options.writesPerSecond')} writes a second for ${r.num('watchScale.options.writeSeconds')} s (medians of ${r.num('valid_runs')} runs):`,
    ),
    fixed(''),
    ...header(['side', 'event delay p50 / p99', 'memory per connection', 'memory per extra watch', 'CPU per event', "the machine's CPU busy"]),
    ...sides.map(([label, side, proxy]) =>
      line(json, (r) => {
        const k = (what: string): number => r.num(`summary.watch_scale_${side}_${what}`);
        return row([
          label,
          `${k('delay_p50_ms')} / ${k('delay_p99_ms')} ms`,
          proxy ? `${k('memory_per_connection_kb')} kB` : '–',
          proxy ? `${k('memory_per_extra_watch_kb')} kB` : '–',
          proxy ? `${k('cpu_us_per_event')} µs` : '–',
          `${Math.round(k('machine_busy_share') * 100)} %`,
        ]);
      }),
    ),
    fixed(''),
    ...header(['the sidecar over the minimal Envoy', 'median (min–max over the runs)', `target ${WATCH_SCALE_TARGET_RATIO}x`]),
    ...ratios.map(([label, key]) =>
      line(json, (r) =>
        row([label, summaryRatio(r, `watch_scale_${key}`), r.num(`summary.watch_scale_${key}`) <= WATCH_SCALE_TARGET_RATIO ? 'met' : 'not met']),
      ),
    ),
  ];
}
