// The load balancer's health check of each entry point, and the rule that
// takes a backend out of and puts it back into rotation: pure.
//
// The values are HAProxy's defaults for `server ... check` (HAProxy
// configuration manual, section 5.2: `inter` 2000 ms, `rise` 2, `fall` 3;
// the check's timeout is `inter` when `timeout check` is unset), which is
// what the kubeadm HA guide's haproxy.cfg uses (kubernetes/kubeadm
// docs/ha-considerations.md: `option httpchk`, `server <id> <addr> check`,
// no overrides). The path is /readyz rather than the guide's /healthz: it is
// what fails during an apiserver's shutdown delay, and what the sandbox
// itself waits for.

export interface HealthCheckRule {
  path: string;
  /** Time between two checks of one backend (HAProxy `inter`). */
  intervalMs: number;
  /** A check without a 200 within this is a failure. */
  timeoutMs: number;
  /** Consecutive passing checks that put a backend (back) in rotation (HAProxy `rise`). */
  rise: number;
  /** Consecutive failing checks that take a backend in rotation out (HAProxy `fall`). */
  fall: number;
}

export const HEALTH_CHECK: HealthCheckRule = { path: '/readyz', intervalMs: 2000, timeoutMs: 2000, rise: 2, fall: 3 };

/** One backend's health as the load balancer tracks it. */
export interface Health {
  /** Up: the health check lets it take traffic. */
  up: boolean;
  /** Consecutive checks with the same result, counted since the last change of `up` (or since the operator put it back). */
  streak: number;
}

/** A backend the operator has just put back (or that has just started) is down until `rise` checks pass. */
export const DOWN: Health = { up: false, streak: 0 };
export const UP: Health = { up: true, streak: 0 };

/** The health after one more check: down needs `rise` passes in a row to go up, up needs `fall` failures in a row to go down. */
export function afterCheck(health: Health, passed: boolean, rule: Pick<HealthCheckRule, 'rise' | 'fall'>): Health {
  if (health.up === passed) return { up: health.up, streak: 0 };
  const streak = health.streak + 1;
  return streak >= (health.up ? rule.fall : rule.rise) ? { up: !health.up, streak: 0 } : { up: health.up, streak };
}

export const HEALTH_CHECK_SOURCE =
  'HAProxy defaults for `server ... check` (inter 2000 ms, rise 2, fall 3), as in the kubeadm HA guide (kubernetes/kubeadm docs/ha-considerations.md); path /readyz';
