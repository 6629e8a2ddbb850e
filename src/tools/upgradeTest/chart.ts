// The picture: outcomes over time, one band per mode (none, upstream,
// mvproxy behind a plain load balancer, mvproxy with the operator's drain;
// with several runs, the first run of each), the operator's steps as
// labelled rules. A vega-lite spec rendered to SVG by vega's own
// renderer in Node (no canvas: SVG needs none).
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { CATEGORIES, type Category } from './outcomes.js';

export interface ChartBand {
  mode: string;
  perSecond: Array<{ second: number; category: Category; count: number }>;
  /** Operator events: seconds since the mode's start and what happened. */
  marks: Array<{ second: number; label: string }>;
}

const COLORS: Record<Category, string> = {
  ok: '#9ecae1',
  'expected 4xx': '#bdbdbd',
  'spurious 404': '#d62728',
  'incomplete discovery': '#9467bd',
  '5xx with Retry-After': '#ff9f1c',
  '5xx without Retry-After': '#8c2d04',
  '5xx while served': '#e7298a',
  'transport error': '#111111',
};

export function chartSpec(bands: ChartBand[], subtitle = 'three apiservers v1.36.3 -> v1.37.2 -> v1.36.3; rules: operator steps'): TopLevelSpec {
  const rows = bands.flatMap((b) => [
    ...b.perSecond.map((p) => ({
      mode: b.mode,
      layer: 'requests',
      second: p.second,
      category: p.category,
      count: p.count,
      order: CATEGORIES.indexOf(p.category),
    })),
    ...b.marks.map((m) => ({ mode: b.mode, layer: 'step', second: m.second, label: m.label })),
  ]);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'Requests per second during an upgrade and rollback, by outcome',
      subtitle,
    },
    data: { values: rows },
    facet: { row: { field: 'mode', type: 'nominal', sort: bands.map((b) => b.mode), title: null, header: { labelFontSize: 14, labelFontWeight: 'bold' } } },
    spec: {
      width: 900,
      height: 150,
      layer: [
        {
          transform: [{ filter: "datum.layer === 'requests'" }],
          mark: { type: 'bar', width: { band: 1 } },
          encoding: {
            x: { field: 'second', type: 'quantitative', title: 'seconds since the mode started', scale: { domainMin: 0, nice: false } },
            y: { field: 'count', type: 'quantitative', aggregate: 'sum', title: 'requests/s', stack: 'zero' },
            color: {
              field: 'category',
              type: 'nominal',
              title: 'outcome',
              legend: { labelLimit: 250 },
              scale: { domain: [...CATEGORIES], range: CATEGORIES.map((c) => COLORS[c]) },
            },
            order: { field: 'order', type: 'quantitative' },
          },
        },
        {
          transform: [{ filter: "datum.layer === 'step'" }],
          mark: { type: 'rule', color: '#444', strokeDash: [4, 3] },
          encoding: { x: { field: 'second', type: 'quantitative' } },
        },
        {
          transform: [{ filter: "datum.layer === 'step'" }],
          mark: { type: 'text', angle: 270, align: 'right', baseline: 'bottom', dx: -2, dy: -2, fontSize: 9, color: '#222' },
          encoding: { x: { field: 'second', type: 'quantitative' }, y: { value: 0 }, text: { field: 'label', type: 'nominal' } },
        },
      ],
    },
    resolve: { scale: { x: 'shared', y: 'independent' } },
  };
}

export async function renderSvg(bands: ChartBand[], subtitle?: string): Promise<string> {
  const vgSpec = compile(chartSpec(bands, subtitle)).spec;
  const view = new vega.View(vega.parse(vgSpec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
