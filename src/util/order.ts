// Ordering that is the same on every machine.

/** Code-unit order: locale-independent, so sorted output is byte-identical everywhere. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
