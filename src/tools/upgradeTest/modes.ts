// The ways the upgrade test operates the cluster. Each is a sandbox mode plus
// what the operator does around every restart: every mode sits behind the
// same simulated load balancer with the same health check (balancer.ts);
// `mvproxy-drain` adds mvproxy's own `drain --wait` before a restart and
// `undrain --wait` after it.
import type { SandboxMode } from '../sandbox/options.js';

/** The order the modes run in and appear in the JSON and the picture: the problem, upstream's fix, ours behind a plain load balancer, ours with the operator's drain. */
export const TEST_MODES = ['none', 'upstream', 'mvproxy', 'mvproxy-drain'] as const;
export type TestMode = (typeof TEST_MODES)[number];

export function isTestMode(value: string): value is TestMode {
  return (TEST_MODES as readonly string[]).includes(value);
}

/** The sandbox each mode runs in. */
export function sandboxModeOf(mode: TestMode): SandboxMode {
  return mode === 'mvproxy-drain' ? 'mvproxy' : mode;
}

/** Whether the operator drains an apiserver with mvproxy before its restart and undrains it after. */
export function operatorDrains(mode: TestMode): boolean {
  return mode === 'mvproxy-drain';
}

/** Whether clients reach the apiservers through mvproxy's sidecars. */
export function throughSidecars(mode: TestMode): boolean {
  return sandboxModeOf(mode) === 'mvproxy';
}
