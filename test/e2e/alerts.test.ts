// The alerting rules (deploy/prometheus/mvproxy-alerts.yaml), loaded unchanged
// (their own `for:` values, waited out) into a real Prometheus scraping a real
// sandbox as docs/observability.md says: the control plane's /metrics (job
// `mvproxy`) and each sidecar's Envoy stats (job `mvproxy-sidecars`). Silent
// in the steady state; each condition caused for real makes its alert fire,
// and the alerts resolve once it is over (a SIGKILLed sidecar; a control
// plane SIGSTOPped, then SIGKILLed). ext_proc timeouts:
// alertsExtProc.test.ts; the publisher: alertsPublisher.test.ts.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestSandbox, eventually, controlPlaneInSync, type TestSandbox } from '../support/sandbox.js';
import { ALERT_RULES, sandboxScrapeTargets, TestPrometheus, type ActiveAlert } from '../support/prometheus.js';

/** Longest `for:` of the rules this file makes fire, plus scrapes and evaluations. */
const FIRING_TIMEOUT_MS = 200_000;
const NODES = ['kas-a', 'kas-b'];

describe('the alerting rules, evaluated by a real Prometheus scraping the sandbox', () => {
  let tb: TestSandbox;
  let prometheus: TestPrometheus;

  /** Alerts now firing, as "name label=value ..." (only the labels telling what is alerting). */
  const firing = async (): Promise<string[]> =>
    (await prometheus.alerts())
      .filter((a) => a.state === 'firing')
      .map(describeAlert)
      .sort();
  const untilFiring = async (expected: string[]): Promise<void> => {
    await eventually(
      async () => {
        const now = await firing();
        for (const e of expected) assert.ok(now.includes(e), `${e} is not firing; firing: ${JSON.stringify(now)}`);
      },
      FIRING_TIMEOUT_MS,
      1000,
    );
  };
  const untilQuiet = () => eventually(async () => assert.deepEqual(await prometheus.alerts(), []), 90_000, 1000);

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.37.2' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { mode: 'mvproxy', network: 'loopback', controlPlaneReplicas: 'one' },
    );
    await controlPlaneInSync(tb, NODES);
    prometheus = await TestPrometheus.start(sandboxScrapeTargets(tb.state()), [ALERT_RULES]);
  });
  after(async () => {
    await prometheus?.stop();
    await tb?.sandbox.down();
  });

  it('in the steady state no alert is pending or firing', async () => {
    // Every target scraped, every sidecar's series there and in sync.
    await eventually(async () => {
      const health = Object.values(await prometheus.targetHealth());
      assert.deepEqual(health, ['up', 'up', 'up']);
      assert.equal((await prometheus.query('mvproxy_xds_in_sync == 1')).length, 2);
      assert.equal((await prometheus.query('envoy_control_plane_connected_state == 1')).length, 2);
    });
    // Rules are evaluated every second: 10 evaluations, not one alert even pending.
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(await prometheus.alerts(), []);
      await sleep(1000);
    }
  });

  it('a SIGKILLed sidecar: it is not live, not connected, and does not hold its configuration; all resolve once it runs again', async () => {
    await tb.sandbox.killSidecar('kas-b');
    try {
      await untilFiring([
        'MvproxySidecarNotLive sidecar=kas-b',
        'MvproxyControlPlaneNotConnected node=kas-b sidecar=kas-b',
        'MvproxyDocumentsStale node=kas-b',
      ]);
      assert.deepEqual(
        (await firing()).filter((a) => !a.includes('kas-b')),
        [],
        'only kas-b alerts',
      );
    } finally {
      await tb.sandbox.startSidecar('kas-b');
    }
    await controlPlaneInSync(tb, NODES);
    await untilQuiet();
  });

  it('a control plane stopped in its tracks (SIGSTOP) is down; the alert resolves once it runs again', async () => {
    tb.sandbox.pauseControlPlane();
    try {
      await untilFiring(['MvproxyControlPlaneDown']);
      // Its sockets still accept connections: Envoy's control_plane.connected_state stays 1, so only the scrape tells.
      assert.deepEqual(await firing(), ['MvproxyControlPlaneDown']);
    } finally {
      tb.sandbox.resumeControlPlane();
    }
    await controlPlaneInSync(tb, NODES);
    await untilQuiet();
  });

  it('a SIGKILLed control plane is down and every sidecar sees it is not connected; all resolve once it runs again', async () => {
    await tb.sandbox.killControlPlane();
    try {
      await untilFiring(['MvproxyControlPlaneDown', 'MvproxyControlPlaneNotConnected sidecar=kas-a', 'MvproxyControlPlaneNotConnected sidecar=kas-b']);
    } finally {
      await tb.sandbox.restartControlPlane();
    }
    await controlPlaneInSync(tb, NODES);
    await untilQuiet();
  });
});

/** "alertname node=.. sidecar=..": the labels that say what alerts, not where Prometheus scraped it. */
function describeAlert(a: ActiveAlert): string {
  const subject = ['node', 'sidecar'].filter((k) => a.labels[k] !== undefined).map((k) => `${k}=${a.labels[k]}`);
  return [a.labels['alertname'] ?? '', ...subject].join(' ');
}
