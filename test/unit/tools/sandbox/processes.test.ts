// Waiting for a sandbox component to be ready (ManagedProcess.waitReady in
// src/tools/sandbox/processes.ts), with `sleep` standing in for the component.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess } from '../../../../src/tools/sandbox/processes.js';

describe('ManagedProcess.waitReady', () => {
  const proc = new ManagedProcess({
    name: 'sleeper',
    command: 'sleep',
    args: ['60'],
    logFile: join(mkdtempSync(join(tmpdir(), 'mvproxy-proc-')), 'sleeper.log'),
  });
  after(() => proc.kill());

  it('a probe that never answers is given up at the deadline, and the error says so', async () => {
    const started = Date.now();
    await assert.rejects(
      proc.waitReady('the sleeper', () => new Promise<boolean>(() => undefined), 300, 10),
      /not ready after 0\.3 s \(last probe: probe unanswered after/,
    );
    // A bound on a hang, not a figure: without the per-probe limit the wait never ends.
    assert.ok(Date.now() - started < 5000);
  });

  it('a probe after one that never answered is sent, and its answer counts', async () => {
    let probes = 0;
    await proc.waitReady(
      'the sleeper',
      (signal) =>
        ++probes === 1 ? new Promise<boolean>((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) : Promise.resolve(true),
      10_000,
      10,
    );
    assert.equal(probes, 2);
  });

  it('the error gives what the last probe said', async () => {
    await assert.rejects(
      proc.waitReady('the sleeper', () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1')), 100, 10),
      /last probe: connect ECONNREFUSED 127\.0\.0\.1:1/,
    );
  });
});
