// Reading /proc for the benches: src/tools/bench/procStat.ts.
import assert from 'node:assert/strict';
import { pbkdf2Sync } from 'node:crypto';
import { describe, test } from 'node:test';
import { cpuTicksOfStat, processCpuTicks, statusKb, USER_HZ } from '../../../../src/tools/bench/procStat.js';

describe('cpuTicksOfStat', () => {
  test('sums utime and stime (fields 14 and 15)', () => {
    const stat = '4242 (node) S 1 4242 4242 0 -1 4194560 9000 0 12 0 350 42 0 0 20 0 11 0 123456 1234567890 25000 18446744073709551615';
    assert.equal(cpuTicksOfStat(stat), 392);
  });

  test('a command name with spaces and parentheses does not shift the fields', () => {
    const stat = '77 (my (odd) cmd) x) R 1 77 77 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 99 1000 10 18446744073709551615\n';
    assert.equal(cpuTicksOfStat(stat), 12);
  });

  test('reads the CPU time this process burns', () => {
    // A third of a second of busy work, as getrusage counts it, shows in /proc as about as many ticks more.
    const before = processCpuTicks(process.pid);
    const started = process.cpuUsage();
    let burned = process.cpuUsage(started);
    for (; burned.user + burned.system < 300_000; burned = process.cpuUsage(started)) pbkdf2Sync('cpu', 'salt', 10_000, 32, 'sha256');
    const burnedTicks = ((burned.user + burned.system) / 1e6) * USER_HZ;
    const grew = processCpuTicks(process.pid) - before;
    assert.ok(grew >= 0.6 * burnedTicks && grew <= 2 * burnedTicks + 10, `${grew} ticks read for ${burnedTicks.toFixed(0)} ticks burned`);
  });
});

describe('statusKb', () => {
  const status = 'Name:\tnode\nVmPeak:\t  900000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   80000 kB\nThreads:\t11\n';

  test('reads a kB field by name', () => {
    assert.equal(statusKb(status, 'VmHWM'), 81234);
    assert.equal(statusKb(status, 'VmRSS'), 80000);
  });

  test('an absent field is NaN', () => {
    assert.ok(Number.isNaN(statusKb(status, 'VmSwap')));
    assert.ok(Number.isNaN(statusKb(status, 'Threads')));
  });
});
