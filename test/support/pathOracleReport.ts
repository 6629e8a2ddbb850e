// The path oracle's report: every case's findings sorted into disagreements
// (bugs), literal spellings and invalid request targets, with counts, and
// the report as text.
import type { SidecarPlan } from '../../src/planner/plan.js';
import { compare, type Finding, invalidTarget, onlyLiteralSpelling } from './pathOracleCompare.js';
import type { CaseResult } from './pathOracleEvidence.js';
import { LOCAL, PEER } from './pathOracleFixtures.js';

export interface OracleReport {
  results: CaseResult[];
  /** Every disagreement: each is a bug. */
  disagreements: Finding[];
  /** Differences due only to names spelled with escapes of unreserved characters, routed as spelled and never refused. */
  literalSpellings: Finding[];
  /** Request targets HTTP does not allow, which Envoy refuses (400) and kube-apiserver may accept. */
  invalidTargets: Finding[];
  counts: Record<string, number>;
}

/** Sorts the findings of every case into the report. */
export function report(results: CaseResult[], plan: SidecarPlan): OracleReport {
  const disagreements: Finding[] = [];
  const literalSpellings: Finding[] = [];
  const invalidTargets: Finding[] = [];
  for (const r of results) {
    const findings = compare(r, plan);
    if (findings.length === 0) continue;
    if (onlyLiteralSpelling(r, findings, plan)) literalSpellings.push(...findings);
    else if (invalidTarget(r)) invalidTargets.push(...findings);
    else disagreements.push(...findings);
  }
  const counts: Record<string, number> = {
    cases: results.length,
    'received by kas-a through the sidecar': results.filter((r) => r.readings.some((x) => x.apiserver === LOCAL)).length,
    'received by kas-b through the sidecar': results.filter((r) => r.readings.some((x) => x.apiserver === PEER)).length,
    'answered by Envoy itself': results.filter((r) => r.clusters.length === 0).length,
    'forwarded, no audit event (rejected before auditing)': results.filter((r) => r.clusters.length > 0 && r.readings.length === 0).length,
    'resource requests (as kas-a reads them directly)': results.filter((r) => r.directReading?.objectRef).length,
    'reached the proxy backend': results.filter((r) => r.backendViaSidecar !== undefined || r.backendDirect !== undefined).length,
    'cases that disagree': new Set(disagreements.map((f) => f.result.case.id)).size,
    'cases differing only by literal spelling': new Set(literalSpellings.map((f) => f.result.case.id)).size,
    'invalid request targets refused by Envoy': new Set(invalidTargets.map((f) => f.result.case.id)).size,
  };
  return { results, disagreements, literalSpellings, invalidTargets, counts };
}

export function describeFinding(f: Finding): string {
  const c = f.result.case;
  const what = `${c.method ?? 'GET'} ${JSON.stringify(f.result.path.length > 160 ? `${f.result.path.slice(0, 157)}...` : f.result.path)}`;
  const statuses = `(sidecar ${f.result.viaSidecar.status}, direct ${f.result.direct.status})`;
  return `[${f.kind}] ${c.id} ${what} ${statuses}: expected ${f.expected}; got ${f.actual}${c.why ? ` -- ${c.why}` : ''}`;
}

export function formatOracleReport(report: OracleReport): string {
  const lines = Object.entries(report.counts).map(([what, n]) => `${String(n).padStart(6)}  ${what}`);
  const byKind = (findings: Finding[]): string[] =>
    [...new Set(findings.map((f) => f.kind))].map((kind) => `${String(findings.filter((f) => f.kind === kind).length).padStart(6)}  ${kind}`);
  lines.push('', `disagreements: ${report.disagreements.length}`, ...byKind(report.disagreements), ...report.disagreements.map(describeFinding));
  lines.push('', `differences only in literal spelling (routed as spelled, not refused): ${report.literalSpellings.length}`);
  lines.push(...report.literalSpellings.map(describeFinding));
  lines.push('', `invalid request targets that Envoy refuses (400): ${report.invalidTargets.length}`, ...report.invalidTargets.map(describeFinding));
  return lines.join('\n');
}
