// What the path oracle observes of each case: which apiserver logged it and
// how it read it (the audit logs), and which sidecar clusters carried it
// (Envoy's statistics).
import { readFileSync } from 'node:fs';
import { envoyAdminJson } from './envoyAdmin.js';
import type { OracleCase } from './pathOracleCases.js';
import type { Answer } from './pathOracleSend.js';

export interface AuditEvent {
  userAgent?: string;
  requestURI?: string;
  verb?: string;
  stage?: string;
  objectRef?: { apiGroup?: string; apiVersion?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

/** How an apiserver read a request: its audit event. */
export interface Reading {
  apiserver: string;
  requestURI: string;
  verb: string;
  objectRef?: AuditEvent['objectRef'];
}

export interface CaseResult {
  case: OracleCase;
  path: string;
  viaSidecar: Answer;
  direct: Answer;
  /** Which sidecar clusters carried it (`local-h1-front-proxy`, ...); none when Envoy answered itself. */
  clusters: string[];
  /** The apiservers that logged it through the sidecar (normally one), and kas-a's reading of it sent directly. */
  readings: Reading[];
  directReading?: Reading;
  /** What the proxy subresource's backend received, through the sidecar and directly. */
  backendViaSidecar?: string;
  backendDirect?: string;
}

/** Upstream requests per sidecar cluster so far (Envoy admin statistics). */
export async function clusterRequests(adminSocket: string): Promise<Map<string, number>> {
  const { stats } = await envoyAdminJson<{ stats: Array<{ name: string; value?: number }> }>(
    adminSocket,
    `/stats?format=json&filter=${encodeURIComponent('^cluster\\.[^.]+\\.upstream_rq_total$')}`,
  );
  return new Map(stats.map((s) => [s.name.replace(/^cluster\.|\.upstream_rq_total$/g, ''), s.value ?? 0]));
}

/**
 * Every request the sidecar's listener received (`http.apiserver.downstream_rq_total`):
 * more than one in a case's window means something else went through the
 * sidecar meanwhile (the kubernetes Service publisher probes every sidecar's
 * /readyz), so the clusters counted in that window are not the case's alone.
 */
export async function sidecarRequestsReceived(adminSocket: string): Promise<number> {
  const { stats } = await envoyAdminJson<{ stats: Array<{ name: string; value?: number }> }>(
    adminSocket,
    `/stats?format=json&filter=${encodeURIComponent('^http\\.apiserver\\.downstream_rq_total$')}`,
  );
  return stats[0]?.value ?? 0;
}

/** Adds the readings of the requests whose User-Agent starts with `prefix` from one apiserver's audit log, by User-Agent. */
export function readAuditLog(path: string, apiserver: string, prefix: string, into: Map<string, Reading[]>): void {
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.includes(prefix)) continue;
    const event = JSON.parse(line) as AuditEvent;
    const ua = event.userAgent ?? '';
    if (!ua.startsWith(prefix)) continue;
    const readings = into.get(ua) ?? [];
    // A watch logs ResponseStarted and ResponseComplete: one reading per apiserver.
    if (!readings.some((r) => r.apiserver === apiserver)) {
      readings.push({ apiserver, requestURI: event.requestURI ?? '', verb: event.verb ?? '', ...(event.objectRef ? { objectRef: event.objectRef } : {}) });
    }
    into.set(ua, readings);
  }
}
