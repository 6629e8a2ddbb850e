// Kubernetes Events about the `kubernetes` Service from its publisher
// (issue 29): events.k8s.io/v1 Events in default regarding Service
// default/kubernetes, so `kubectl describe service kubernetes` and `kubectl
// get events` show what the replicas do about it. Rate-limited by the caller
// (planner/publisherDecision.ts EventLimiter); a failed create is logged at
// debug and dropped: an event is never worth a retry loop.
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import { errorMessage } from './runtime.js';
import { kubeRequest } from './kubeRequest.js';

export interface ServiceEvent {
  /** CamelCase, e.g. PublisherHolding, ForeignWrite, ConfigMismatch. */
  reason: string;
  type: 'Normal' | 'Warning';
  /** What happened, one line (cut to 1 KiB, the API's limit). */
  note: string;
}

/** Sends one event; never rejects. */
export type ServiceEventSink = (event: ServiceEvent) => void;

export const REPORTING_CONTROLLER = 'mvproxy.dev/control-plane';
const TIMEOUT_MS = 5000;

/** The Event object (pure). `at` is epoch milliseconds. */
export function serviceEventBody(event: ServiceEvent, replica: string, at: number): Record<string, unknown> {
  const eventTime = new Date(at).toISOString().replace(/Z$/, '000Z');
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `kubernetes.${at.toString(16)}${randomBytes(4).toString('hex')}`, namespace: 'default' },
    eventTime,
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: replica.slice(0, 128),
    action: 'Publish',
    reason: event.reason,
    type: event.type,
    note: event.note.slice(0, 1024),
    regarding: { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'kubernetes' },
  };
}

export function kubeServiceEventSink(kubeConfig: KubeConfig, replica: string, logger: Logger, clock: () => number = Date.now): ServiceEventSink {
  return (event) => {
    kubeRequest(kubeConfig, {
      method: 'POST',
      path: '/apis/events.k8s.io/v1/namespaces/default/events',
      body: serviceEventBody(event, replica, clock()),
      timeoutMs: TIMEOUT_MS,
    }).catch((err: unknown) => logger.debug({ err: errorMessage(err), reason: event.reason }, 'could not create a Kubernetes Event'));
  };
}
