// metav1.Status, the body every Kubernetes error carries; mvproxy's own
// answers (503s, 401s) use it so clients handle them like an apiserver's.
// KubeApiError is such an answer received: sources throw it, the admin API
// maps it to its own code.
import { isRecord } from '../util/json.js';

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
}

function failureStatus(code: number, reason: string, message: string): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

/** The JSON a client gets when a request cannot be served now and should be retried. */
export function serviceUnavailableJson(why: string): string {
  return JSON.stringify(failureStatus(503, 'ServiceUnavailable', `the server is currently unable to handle the request: ${why}`));
}

/**
 * `: <message>` (its first 200 characters) of a metav1.Status body, for an
 * error that names an HTTP status; empty when the body is not one (never the
 * request's headers).
 */
export function statusMessageSuffix(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isRecord(parsed) && typeof parsed['message'] === 'string') return `: ${parsed['message'].slice(0, 200)}`;
  } catch {
    // not JSON: no detail
  }
  return '';
}

/** An error answer from the apiserver, with its HTTP status (404, 409, 410 Gone...). */
export class KubeApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}
