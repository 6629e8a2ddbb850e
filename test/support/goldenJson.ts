// The JSON text of golden files: canonical data (sorted keys, bytes readable)
// written with a two-space indent, an object or array that fits on its line
// written on it; and the way back from that data to what the translator made.
import assert from 'node:assert/strict';
import { readFilterModules } from '../../src/xds/filterModule.js';

/** What the filter modules' bytes are written as (tens of kilobytes that change with every filter build). */
export const MODULE_PLACEHOLDER = '<filter module: settings.filterModule>';
export const DOCUMENT_MODULE_PLACEHOLDER = '<document module: settings.documentModule>';
const documentModule = readFilterModules().documents;
const BASE64_PREFIX = '<bytes base64 ';

/** Plain JSON data, as golden files hold it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Object keys in golden files: `name` first (what a resource or route is), then the others sorted. */
function byKey(a: string, b: string): number {
  if (a === b) return 0;
  if (a === 'name' || b === 'name') return a === 'name' ? -1 : 1;
  return a < b ? -1 : 1;
}

/**
 * `value` as plain JSON data: object keys sorted (`name` first), undefined fields dropped,
 * the filter module as MODULE_PLACEHOLDER, other bytes as base64.
 * Anything else JSON cannot carry faithfully fails.
 */
export function canonical(value: unknown, module: Uint8Array, path: string): Json {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    assert.ok(Number.isFinite(value), `${path}: ${value} has no JSON form`);
    return value;
  }
  if (value instanceof Uint8Array) {
    if (Buffer.compare(value, module) === 0) return MODULE_PLACEHOLDER;
    if (Buffer.compare(value, documentModule) === 0) return DOCUMENT_MODULE_PLACEHOLDER;
    return `${BASE64_PREFIX}${Buffer.from(value).toString('base64')}>`;
  }
  if (Array.isArray(value)) return value.map((item, i) => canonical(item, module, `${path}[${i}]`));
  assert.ok(typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype, `${path}: ${typeof value} is not plain data`);
  const sorted: Record<string, Json> = {};
  for (const key of Object.keys(value).sort(byKey)) {
    const field = (value as Record<string, unknown>)[key];
    if (field !== undefined) sorted[key] = canonical(field, module, `${path}.${key}`);
  }
  return sorted;
}

/**
 * Canonical data as Envoy gets it: the module placeholder back to the module,
 * base64 back to bytes, and each string `files` maps (fixed fake certificate
 * paths) to its value (a real file).
 */
export function withBytes(value: Json, module: Uint8Array, files: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') {
    if (value === MODULE_PLACEHOLDER) return Buffer.from(module);
    if (value === DOCUMENT_MODULE_PLACEHOLDER) return Buffer.from(documentModule);
    if (value.startsWith(BASE64_PREFIX) && value.endsWith('>')) return Buffer.from(value.slice(BASE64_PREFIX.length, -1), 'base64');
    return files.get(value) ?? value;
  }
  if (Array.isArray(value)) return value.map((item) => withBytes(item, module, files));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, withBytes(field, module, files)]));
  }
  return value;
}

/** Lines are at most this long where an object or array fits on one (Biome's width for code). */
const LINE_WIDTH = 160;

/** The text of a golden file: `value` formatted (formatJson) and a final newline. */
export function jsonText(value: Json): string {
  return `${formatJson(value, '', 0)}\n`;
}

/**
 * JSON text of canonical data, two-space indent; an object or array that fits
 * on its line (LINE_WIDTH) is written on it, `{"key": value, ...}`; one that
 * does not but has a single member opens and closes on its member's lines,
 * `{"key": {` ... `}}`.
 */
function formatJson(value: Json, indent: string, prefixLength: number): string {
  const oneLine = formatJsonOneLine(value);
  if (value === null || typeof value !== 'object' || indent.length + prefixLength + oneLine.length <= LINE_WIDTH) return oneLine;
  const entries: Array<[string, Json]> = Array.isArray(value) ? value.map((item) => ['', item]) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  const key = (name: string): string => (Array.isArray(value) ? '' : `${JSON.stringify(name)}: `);
  const [only] = entries;
  if (entries.length === 1 && only !== undefined && only[1] !== null && typeof only[1] === 'object') {
    const opening = `${open}${key(only[0])}`;
    return `${opening}${formatJson(only[1], indent, prefixLength + opening.length)}${close}`;
  }
  const inner = `${indent}  `;
  const lines = entries.map(([name, item]) => `${inner}${key(name)}${formatJson(item, inner, key(name).length)}`);
  return `${open}\n${lines.join(',\n')}\n${indent}${close}`;
}

function formatJsonOneLine(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(formatJsonOneLine).join(', ')}]`;
  return `{${Object.entries(value)
    .map(([name, item]) => `${JSON.stringify(name)}: ${formatJsonOneLine(item)}`)
    .join(', ')}}`;
}

/** Where two texts first differ, with a few lines of each around it. */
export function firstDifference(expected: string, actual: string): string {
  const want = expected.split('\n');
  const got = actual.split('\n');
  let line = 0;
  while (line < want.length && line < got.length && want[line] === got[line]) line++;
  const excerpt = (lines: string[]): string =>
    lines
      .slice(Math.max(0, line - 2), line + 3)
      .map((l, i) => `    ${Math.max(0, line - 2) + i + 1}: ${l}`)
      .join('\n');
  return `first difference at line ${line + 1}\n  golden file:\n${excerpt(want)}\n  translator now:\n${excerpt(got)}`;
}

/** A deep copy of `base` with `override`'s fields put in, objects merged field by field (arrays and other values replace). */
export function merged(base: Json, override: Json | undefined): Json {
  if (override === undefined) return base;
  if (!isObject(base) || !isObject(override)) return override;
  const out: Record<string, Json> = { ...base };
  for (const [key, value] of Object.entries(override)) out[key] = merged(base[key] ?? null, value);
  return out;
}

export function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
