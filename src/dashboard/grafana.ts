// Pure: the Grafana dashboard JSON rendered from DASHBOARD_ROWS (the tests
// read the queries back out of the JSON, test/support/dashboardQueries.ts:
// the file operators import, not the TypeScript it came from).
import type { JsonObject } from '../xds/bootstrap.js';
import { DASHBOARD_ROWS, type RowSpec } from './panels.js';

/** The dashboard's datasource variable: every panel and query points at it. */
export const DATASOURCE_VARIABLE = 'datasource';
const DATASOURCE: JsonObject = { type: 'prometheus', uid: `\${${DATASOURCE_VARIABLE}}` };
/** Panels per row, side by side. */
const COLUMNS = 2;
const PANEL_HEIGHT = 8;
const FULL_WIDTH = 24;

/** Renders the dashboard (Grafana's JSON model, schema 39: Grafana 10 and later). */
export function grafanaDashboard(rows: readonly RowSpec[] = DASHBOARD_ROWS): JsonObject {
  const panels: JsonObject[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    panels.push({ type: 'row', id: id++, title: row.title, collapsed: false, gridPos: { h: 1, w: FULL_WIDTH, x: 0, y }, panels: [] });
    y += 1;
    row.panels.forEach((panel, i) => {
      const width = FULL_WIDTH / COLUMNS;
      panels.push({
        type: 'timeseries',
        id: id++,
        title: panel.title,
        description: panel.description,
        datasource: DATASOURCE,
        gridPos: { h: PANEL_HEIGHT, w: width, x: (i % COLUMNS) * width, y: y + Math.floor(i / COLUMNS) * PANEL_HEIGHT },
        fieldConfig: { defaults: { unit: panel.unit, custom: { fillOpacity: 10, showPoints: 'never' } }, overrides: [] },
        options: { legend: { displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } },
        targets: panel.targets.map((t, j) => ({
          refId: String.fromCharCode(65 + j),
          datasource: DATASOURCE,
          expr: t.expr,
          legendFormat: t.legend,
          range: true,
        })),
      });
    });
    y += Math.ceil(row.panels.length / COLUMNS) * PANEL_HEIGHT;
  }
  return {
    title: 'mvproxy',
    uid: 'mvproxy',
    description: "mvproxy's control plane (rerouting, 503s, discovery, xDS, ext_proc, drains) and its Envoy sidecars.",
    tags: ['mvproxy', 'envoy', 'kubernetes'],
    editable: true,
    schemaVersion: 39,
    version: 1,
    refresh: '10s',
    time: { from: 'now-1h', to: 'now' },
    timezone: 'browser',
    templating: {
      list: [
        { name: DATASOURCE_VARIABLE, label: 'Prometheus', type: 'datasource', query: 'prometheus', current: {}, hide: 0, refresh: 1, regex: '', options: [] },
      ],
    },
    annotations: { list: [] },
    panels,
  };
}
