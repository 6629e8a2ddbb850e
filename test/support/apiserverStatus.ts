// kube-apiserver's own error bodies, as the tests' fake apiservers write them
// and as what mvproxy answers in their place must read.
import type { Status } from '../../src/model/status.js';

/** The 401 kube-apiserver answers a request it cannot authenticate. */
export const UNAUTHORIZED_STATUS: Status = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'Unauthorized',
  reason: 'Unauthorized',
  code: 401,
};
