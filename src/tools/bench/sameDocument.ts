// Whether two merged discovery documents say the same thing: the bench's
// check that mvproxy's answer and upstream's are the same document, not only
// both 200. Compared as parsed JSON, so field order and whitespace (which Go
// and mvproxy's encoders may write differently) do not count; the order of
// list items does, and is reported apart, because clients read the preferred
// version as the first one.

/** The field that names an item of a discovery list, by the list's key. */
const ITEM_NAME: Readonly<Record<string, (item: Record<string, unknown>) => unknown>> = {
  items: (item) => (item['metadata'] as Record<string, unknown> | undefined)?.['name'],
  versions: (item) => item['version'],
  resources: (item) => item['resource'],
  subresources: (item) => item['subresource'],
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Pure: where `b` differs from `a`, as readable paths (at most `limit`); empty when they are the same document. */
export function documentDifferences(a: unknown, b: unknown, limit = 20): string[] {
  const out: string[] = [];
  const note = (line: string): void => {
    if (out.length < limit) out.push(line);
  };
  const walk = (x: unknown, y: unknown, path: string, listKey: string): void => {
    if (Array.isArray(x) && Array.isArray(y)) {
      const name = ITEM_NAME[listKey];
      if (name && x.every(isObject) && y.every(isObject)) walkNamed(x, y, path, name);
      else if (x.length !== y.length) note(`${path}: ${x.length} items, ${y.length} items`);
      else for (const [i, item] of x.entries()) walk(item, y[i], `${path}[${i}]`, '');
      return;
    }
    if (isObject(x) && isObject(y)) {
      for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) {
        if (!(key in y)) note(`${path}.${key}: only in the first`);
        else if (!(key in x)) note(`${path}.${key}: only in the second`);
        else walk(x[key], y[key], `${path}.${key}`, key);
      }
      return;
    }
    if (x !== y) note(`${path}: ${JSON.stringify(x)} and ${JSON.stringify(y)}`);
  };
  const walkNamed = (x: Record<string, unknown>[], y: Record<string, unknown>[], path: string, name: (item: Record<string, unknown>) => unknown): void => {
    const names = (list: Record<string, unknown>[]): string[] => list.map((item) => String(name(item)));
    const [xs, ys] = [names(x), names(y)];
    for (const n of xs) if (!ys.includes(n)) note(`${path}[${n}]: only in the first`);
    for (const n of ys) if (!xs.includes(n)) note(`${path}[${n}]: only in the second`);
    const common = xs.filter((n) => ys.includes(n));
    const commonInY = ys.filter((n) => xs.includes(n));
    if (common.join() !== commonInY.join()) note(`${path}: order ${common.join(',')} and ${commonInY.join(',')}`);
    for (const n of common) walk(x[xs.indexOf(n)], y[ys.indexOf(n)], `${path}[${n}]`, '');
  };
  walk(a, b, '', '');
  return out;
}
