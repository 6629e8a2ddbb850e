// The queries read back out of any Grafana dashboard JSON: what the tests
// evaluate (the file operators import, not the TypeScript it came from,
// src/dashboard/grafana.ts).
import type { JsonObject, JsonValue } from '../../src/xds/bootstrap.js';

/** One query of a dashboard: where it is and what it asks. */
export interface DashboardQuery {
  row: string;
  panel: string;
  refId: string;
  expr: string;
  /** The panel's datasource uid (a variable reference such as `${datasource}`). */
  datasource: string;
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: JsonValue | undefined): string {
  return typeof v === 'string' ? v : '';
}

function list(v: JsonValue | undefined): JsonObject[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

/**
 * Every target's expr in a dashboard JSON, in panel order, with the row each
 * panel is under (rows list their panels inside themselves when collapsed,
 * after themselves when open). Throws on a panel target without an expr.
 */
export function dashboardQueries(dashboard: JsonValue): DashboardQuery[] {
  if (!isObject(dashboard)) throw new Error('a dashboard is a JSON object');
  const queries: DashboardQuery[] = [];
  let row = '';
  const visit = (panel: JsonObject): void => {
    if (panel['type'] === 'row') {
      row = str(panel['title']);
      for (const inner of list(panel['panels'])) visit(inner);
      return;
    }
    const title = str(panel['title']);
    const panelSource = isObject(panel['datasource']) ? str(panel['datasource']['uid']) : '';
    for (const target of list(panel['targets'])) {
      const expr = str(target['expr']);
      if (expr === '') throw new Error(`panel ${JSON.stringify(title)} has a target without an expr`);
      const datasource = isObject(target['datasource']) ? str(target['datasource']['uid']) : panelSource;
      queries.push({ row, panel: title, refId: str(target['refId']), expr, datasource });
    }
  };
  for (const panel of list(dashboard['panels'])) visit(panel);
  return queries;
}

/**
 * A query as Prometheus itself can run it: Grafana's interval variables
 * replaced by `window` (e.g. `30s`, several scrape intervals).
 */
export function evaluableExpr(expr: string, window: string): string {
  return expr.replaceAll('$__rate_interval', window).replaceAll('$__interval', window).replaceAll('$__range', window);
}

/** Metric names a query reads (identifiers followed by `{` or `[`, or standing alone in a function call). */
export function queriedMetrics(expr: string): string[] {
  // Label values and grouping clauses (`by (type)`) name no metric.
  const withoutStrings = expr.replace(/"[^"]*"/g, '""').replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of withoutStrings.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?=[{[])/g)) if (m[1]) names.add(m[1]);
  for (const m of withoutStrings.matchAll(/\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\)/g)) if (m[1]) names.add(m[1]);
  return [...names];
}
