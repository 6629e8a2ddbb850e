// What the benches read of a process from Linux /proc.
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
export const USER_HZ = 100;

/** User plus system CPU time, in clock ticks, of a /proc/<pid>/stat line. */
export function cpuTicksOfStat(stat: string): number {
  // The command name is in parentheses and may contain spaces and parentheses: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
  return Number(fields[11]) + Number(fields[12]);
}

/** User plus system CPU time, in clock ticks, a process has used so far. */
export function processCpuTicks(pid: number): number {
  return cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** User plus system CPU seconds a process has used so far. */
export function processCpuSeconds(pid: number): number {
  return processCpuTicks(pid) / USER_HZ;
}

/** A `/proc/<pid>/status` field given in kB (VmHWM, VmRSS...); NaN when absent. */
export function statusKb(status: string, key: string): number {
  return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
}
