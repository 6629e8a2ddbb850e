// `npm run dashboard:update`: writes deploy/grafana/mvproxy-dashboard.json
// from src/dashboard/panels.ts (a unit test checks the file is up to date).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { grafanaDashboard } from './grafana.js';

/** The dashboard file, relative to the repository root. */
export const DASHBOARD_FILE = 'deploy/grafana/mvproxy-dashboard.json';

/** The file's exact text. */
export function dashboardFileText(): string {
  return `${JSON.stringify(grafanaDashboard(), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // dist/src/dashboard/write.js -> the repository root.
  const path = fileURLToPath(new URL(`../../../${DASHBOARD_FILE}`, import.meta.url));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, dashboardFileText());
  process.stdout.write(`wrote ${path}\n`);
}
