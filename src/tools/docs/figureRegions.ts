// The generated regions of the documents: figures rendered from a committed
// JSON between two markers, so that no figure in docs/ is copied by hand.
//
//   <!-- figures bench-fanout.json fanout-latency: begin -->
//   ...rendered lines...
//   <!-- figures bench-fanout.json fanout-latency: end -->
//
// The file is named relative to docs/; the region names a renderer (regions.ts).
// Pure: no file I/O here (figures.ts reads and writes).

/** One rendered line and the JSON keys its figures come from (named when a document differs). */
export interface FigureLine {
  text: string;
  from: string[];
}

/** Renders one region's lines from a parsed JSON (named by `file`, relative to docs/, for a renderer that says which). */
export type Render = (json: unknown, file: string) => FigureLine[];

/** Reads figures out of a JSON and records which keys were read. */
export interface Reader {
  num(path: string | readonly string[]): number;
  str(path: string | readonly string[]): string;
  /** Any value (an object or array to iterate over); its key is recorded too. */
  value(path: string | readonly string[]): unknown;
  /** Whether the JSON holds `path` at all (a figure only some runs record, e.g. the spread of a combined run). */
  has(path: string | readonly string[]): boolean;
}

const segments = (path: string | readonly string[]): readonly string[] => (typeof path === 'string' ? path.split('.') : path);

/** The value at `path` in `json`; throws naming the path when it is absent. */
export function lookup(json: unknown, path: readonly string[]): unknown {
  let here: unknown = json;
  for (const key of path) {
    if (here === null || typeof here !== 'object' || !(key in here)) throw new Error(`no key ${path.join('.')} in the JSON`);
    here = (here as Record<string, unknown>)[key];
  }
  return here;
}

/** One line whose text `build` makes from figures it reads through the reader. */
export function line(json: unknown, build: (r: Reader) => string): FigureLine {
  const from: string[] = [];
  const value = (path: string | readonly string[]): unknown => {
    const keys = segments(path);
    from.push(keys.join('.'));
    return lookup(json, keys);
  };
  const typed =
    <T>(kind: string, is: (v: unknown) => v is T) =>
    (path: string | readonly string[]): T => {
      const v = value(path);
      if (!is(v)) throw new Error(`${segments(path).join('.')} is not a ${kind}: ${JSON.stringify(v)}`);
      return v;
    };
  const reader: Reader = {
    num: typed('number', (v): v is number => typeof v === 'number' && Number.isFinite(v)),
    str: typed('string', (v): v is string => typeof v === 'string'),
    value,
    has: (path) => {
      try {
        value(path);
        return true;
      } catch {
        return false;
      }
    },
  };
  const text = build(reader);
  return { text, from: [...new Set(from)] };
}

/** A line with no figure in it (a table's header, a fixed word). */
export const fixed = (text: string): FigureLine => ({ text, from: [] });

/** A Markdown table row. */
export const row = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;

/** A Markdown table's header and separator. */
export const header = (cells: readonly string[]): FigureLine[] => [fixed(row(cells)), fixed(row(cells.map(() => '---')))];

export const ratio = (v: number): string => `${v.toFixed(2)}x`;
export const ms = (v: number): string => `${v} ms`;
export const seconds = (msValue: number): string => `${(msValue / 1000).toFixed(1)} s`;
export const kilobytes = (bytes: number): string => `${Math.round(bytes / 1000)} KB`;
export const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

/** Nearest-rank percentile, as the bench computes its own (p in 0..100). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  const value = sorted[index];
  if (value === undefined) throw new Error('percentile of no values');
  return value;
}

/** A region found in a document: which JSON, which renderer, and the lines between its markers. */
export interface RegionSpan {
  file: string;
  region: string;
  /** 1-based line number of the begin marker. */
  beginLine: number;
  body: string[];
}

const BEGIN = /^<!-- figures (\S+) (\S+): begin -->$/;
const END = /^<!-- figures (\S+) (\S+): end -->$/;

/** Every region of a document, in order; throws on a marker without its pair. */
export function findRegions(markdown: string): RegionSpan[] {
  const lines = markdown.split('\n');
  const spans: RegionSpan[] = [];
  let open: RegionSpan | undefined;
  for (const [i, text] of lines.entries()) {
    const begin = BEGIN.exec(text);
    const end = END.exec(text);
    if (begin) {
      if (open) throw new Error(`line ${i + 1}: region ${begin[2]} begins inside region ${open.region}`);
      open = { file: begin[1] ?? '', region: begin[2] ?? '', beginLine: i + 1, body: [] };
    } else if (end) {
      if (!open || open.file !== end[1] || open.region !== end[2]) throw new Error(`line ${i + 1}: end of ${end[1]} ${end[2]} without its begin`);
      spans.push(open);
      open = undefined;
    } else if (open) open.body.push(text);
  }
  if (open) throw new Error(`line ${open.beginLine}: region ${open.region} of ${open.file} has no end marker`);
  return spans;
}

/** The document with every region's body replaced by `render(file, region)`. */
export function replaceRegions(markdown: string, render: (file: string, region: string) => readonly string[]): string {
  findRegions(markdown); // every marker paired, or throw before writing anything
  const out: string[] = [];
  let open = false;
  for (const text of markdown.split('\n')) {
    const begin = BEGIN.exec(text);
    if (END.exec(text)) open = false;
    if (!open) out.push(text);
    if (begin) {
      out.push(...render(begin[1] ?? '', begin[2] ?? ''));
      open = true;
    }
  }
  return out.join('\n');
}

/** Why a region's text is not what its JSON renders (the first differing line and its keys), or undefined. */
export function regionDifference(span: RegionSpan, rendered: readonly FigureLine[]): string | undefined {
  const count = Math.max(span.body.length, rendered.length);
  for (let i = 0; i < count; i++) {
    const want = rendered[i];
    const have = span.body[i];
    if (want?.text === have) continue;
    const keys = want && want.from.length > 0 ? ` (from ${want.from.join(', ')})` : '';
    return `line ${span.beginLine + 1 + i}${keys}: the document says ${JSON.stringify(have ?? '<nothing>')}, ${span.file} gives ${JSON.stringify(want?.text ?? '<nothing>')}`;
  }
  return undefined;
}
