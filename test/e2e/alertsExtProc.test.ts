// MvproxyExtProcTimeouts (deploy/prometheus/mvproxy-alerts.yaml) against a
// real Envoy sidecar whose ext_proc filter times out for real. A sandbox's
// documents are far under the 16 MiB push budget, so its sidecars never ask
// ext_proc; here the echo sidecar (test/support/echoSidecar.ts) has every
// merged document pushed over the budget, and its control plane (in this
// process) stalls past the message timeout. A real Prometheus scrapes the
// sidecar's Envoy stats as job `mvproxy-sidecars` and evaluates the rules
// unchanged (their own `for:`, waited out).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';

import { DOCUMENT_PUSH_BUDGET_BYTES } from '../../src/translator/translator.js';
import type { MergedDocument } from '../../src/model/requestInfo.js';
import { eventually } from '../support/sandbox.js';
import { ALERT_RULES, TestPrometheus } from '../support/prometheus.js';
import { EXT_PROC_OPENAPI_BODY, KNOWN_TOKEN, envoyStat, extProcFault, peerPartDocuments, send, sidecar, useEchoSidecar } from '../support/echoSidecar.js';

useEchoSidecar();

const INDEX = { path: '/openapi/v3', headers: { Authorization: KNOWN_TOKEN } };
const TIMEOUTS = 'http.apiserver.ext_proc.mvproxy.message_timeouts';

describe('MvproxyExtProcTimeouts, evaluated by a real Prometheus scraping a real sidecar', () => {
  let prometheus: TestPrometheus;

  before(async () => {
    const documents = new Map(peerPartDocuments());
    for (const document of documents.keys()) documents.set(document as MergedDocument, new Uint8Array(DOCUMENT_PUSH_BUDGET_BYTES + 1));
    sidecar.push(documents);
    await eventually(async () => assert.equal((await send(INDEX.path, { headers: INDEX.headers })).body.toString('utf8'), EXT_PROC_OPENAPI_BODY), 10_000);
    prometheus = await TestPrometheus.start({ controlPlanes: [], sidecars: { a: `${sidecar.envoy.adminUrl}/stats/prometheus` } }, [ALERT_RULES]);
  });
  after(async () => {
    await prometheus?.stop();
  });

  it('while ext_proc answers in time, no alert is pending or firing', async () => {
    await eventually(async () => assert.equal((await prometheus.query(`envoy_http_ext_proc_mvproxy_message_timeouts{sidecar="a"}`)).length, 1));
    for (let i = 0; i < 15; i++) {
      assert.equal((await send(INDEX.path, { headers: INDEX.headers })).body.toString('utf8'), EXT_PROC_OPENAPI_BODY);
      assert.deepEqual(await prometheus.alerts(), []);
      await sleep(1000);
    }
  });

  it('an ext_proc request that times out (the control plane stalled past the message timeout) fires it for that sidecar', async () => {
    const before = await envoyStat(TIMEOUTS);
    extProcFault.current = 'stall';
    try {
      await send(INDEX.path, { headers: INDEX.headers });
    } finally {
      extProcFault.current = undefined;
    }
    assert.equal((await envoyStat(TIMEOUTS)) - before, 1);
    const alert = await eventually(
      async () => {
        const firing = (await prometheus.alerts()).filter((a) => a.state === 'firing');
        assert.deepEqual(
          firing.map((a) => `${a.labels['alertname']} ${a.labels['sidecar']}`),
          ['MvproxyExtProcTimeouts a'],
        );
        return firing[0];
      },
      120_000,
      1000,
    );
    assert.match(alert?.annotations['description'] ?? '', /on 1 discovery requests/);
  });
});
