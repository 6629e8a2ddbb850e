// The admin HTTP endpoint's readiness (src/servers/adminHttp.ts): /readyz
// follows what the control plane says (its kubernetes Service publisher),
// /healthz (liveness) never does.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startAdminHttp, stopAdminHttp } from '../../../src/servers/adminHttp.js';

async function serve(t: TestContext, ready?: () => { ready: boolean; why: string }): Promise<string> {
  const { server, url } = await startAdminHttp('127.0.0.1', 0, {
    metrics: async () => ({ type: 'text/plain', body: '' }),
    status: () => ({}),
    page: () => ({}),
    ...(ready ? { ready } : {}),
  });
  t.after(() => stopAdminHttp(server));
  return url;
}

describe('admin HTTP readiness', () => {
  it('/readyz answers 503 with the reason while the control plane is not ready, and /healthz still 200', async (t) => {
    const url = await serve(t, () => ({ ready: false, why: 'the kubernetes Service publisher has not been publishing for 61 s' }));
    const readyz = await fetch(`${url}/readyz`);
    assert.equal(readyz.status, 503);
    assert.equal(await readyz.text(), 'not ready: the kubernetes Service publisher has not been publishing for 61 s\n');
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
  });

  it('/readyz answers 200 while ready, and when nothing is asked of readiness', async (t) => {
    assert.equal((await fetch(`${await serve(t, () => ({ ready: true, why: 'publishing' }))}/readyz`)).status, 200);
    assert.equal((await fetch(`${await serve(t)}/readyz`)).status, 200);
  });
});
