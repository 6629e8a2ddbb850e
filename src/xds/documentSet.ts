// The plugin configuration of a document filter (envoy/filters, root_id
// DOCUMENT_FILTER_ROOT_ID): the documents one filter instance serves, as the
// bytes of a google.protobuf.BytesValue. Pure; the decoder
// (envoy/filters/assembly/documents.ts) is the other side.
//
// Layout, little-endian, every length a u32 byte count:
//   offset 0  "MVPD" (4 bytes)
//          4  u8 version = 2
//          5  u8 kind: 0 core discovery (/api), 1 group discovery (/apis), 2 OpenAPI v3 index (/openapi/v3)
//          6  u32 len + the local apiserver's own ETag for this document (len 0: none)
//             u32 variant count (at most 6), then per variant:
//               u8 format: 0 aggregated JSON, 1 aggregated protobuf, 2 plain JSON (the OpenAPI index)
//               u8 encoding: 0 identity, 1 gzip
//               u32 len + ETag (quoted, as sent in the ETag header)
//               u32 len + Content-Type
//               u32 len + body (encoded as `encoding` says)
// Nothing follows the last variant. Kinds 0 and 1 take formats 0 and 1, kind
// 2 takes format 2; each (format, encoding) pair at most once; ETag and
// Content-Type, and the local ETag when present, non-empty, without control
// characters. A set travels in the same ECDS resource as the module that
// reads it, so the filter only ever reads its own version. An empty
// configuration (zero bytes, not an empty set) means "no documents": the
// filter lets the local apiserver answer.

/** The merged documents (src/model/requestInfo.ts MergedDocument). */
export type DocumentKind = 'core-discovery' | 'group-discovery' | 'openapi-index';

export interface DocumentVariant {
  format: 'aggregated-json' | 'aggregated-protobuf' | 'json';
  encoding: 'identity' | 'gzip';
  /** Quoted, as sent in the ETag header. */
  etag: string;
  contentType: string;
  body: Buffer;
}

export const DOCUMENT_SET_MAGIC = 'MVPD';
export const DOCUMENT_SET_VERSION = 2;
const MAX_VARIANTS = 6;

const KINDS: readonly DocumentKind[] = ['core-discovery', 'group-discovery', 'openapi-index'];
const FORMATS: readonly DocumentVariant['format'][] = ['aggregated-json', 'aggregated-protobuf', 'json'];
const ENCODINGS: readonly DocumentVariant['encoding'][] = ['identity', 'gzip'];

function formatFits(kind: DocumentKind, format: DocumentVariant['format']): boolean {
  return (kind === 'openapi-index') === (format === 'json');
}

function headerValueOk(value: string): boolean {
  if (value.length === 0) return false;
  for (const c of Buffer.from(value, 'utf8')) if ((c < 0x20 && c !== 0x09) || c === 0x7f) return false;
  return true;
}

/**
 * The plugin configuration bytes for these documents; throws on a set the
 * filter would refuse. `localEtag`: the ETag the local apiserver sent with
 * its own version of this document, which the filter revalidates with.
 */
export function encodeDocumentSet(kind: DocumentKind, variants: readonly DocumentVariant[], localEtag?: string): Buffer {
  if (variants.length > MAX_VARIANTS) throw new Error(`at most ${MAX_VARIANTS} variants, not ${variants.length}`);
  if (localEtag !== undefined && !headerValueOk(localEtag)) throw new Error('the local ETag is empty or not a header value');
  const seen = new Set<string>();
  const head = Buffer.alloc(6);
  head.write(DOCUMENT_SET_MAGIC, 0, 'latin1');
  head.writeUInt8(DOCUMENT_SET_VERSION, 4);
  head.writeUInt8(KINDS.indexOf(kind), 5);
  const local = Buffer.from(localEtag ?? '', 'utf8');
  const parts: Buffer[] = [head, u32(local.length), local, u32(variants.length)];
  for (const v of variants) {
    if (!formatFits(kind, v.format)) throw new Error(`a ${kind} document cannot be in format ${v.format}`);
    const key = `${v.format}/${v.encoding}`;
    if (seen.has(key)) throw new Error(`two ${key} variants`);
    seen.add(key);
    if (!headerValueOk(v.etag) || !headerValueOk(v.contentType)) throw new Error(`the ${key} variant's ETag or Content-Type is empty or not a header value`);
    const etag = Buffer.from(v.etag, 'utf8');
    const contentType = Buffer.from(v.contentType, 'utf8');
    const fixed = Buffer.alloc(2);
    fixed.writeUInt8(FORMATS.indexOf(v.format), 0);
    fixed.writeUInt8(ENCODINGS.indexOf(v.encoding), 1);
    parts.push(fixed, u32(etag.length), etag, u32(contentType.length), contentType, u32(v.body.length), v.body);
  }
  return Buffer.concat(parts);
}

function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32LE(value, 0);
  return out;
}

export interface DecodedDocumentSet {
  kind: DocumentKind;
  localEtag?: string;
  variants: DocumentVariant[];
}

/** Reads a document set (tests, admin); throws on what the filter refuses. Empty bytes: undefined (no documents). */
export function decodeDocumentSet(bytes: Buffer): DecodedDocumentSet | undefined {
  if (bytes.length === 0) return undefined;
  if (bytes.length < 14 || bytes.toString('latin1', 0, 4) !== DOCUMENT_SET_MAGIC) throw new Error('not a document set');
  if (bytes.readUInt8(4) !== DOCUMENT_SET_VERSION) throw new Error(`unsupported document set version ${bytes.readUInt8(4)}`);
  const kind = KINDS[bytes.readUInt8(5)];
  if (kind === undefined) throw new Error(`unknown document kind ${bytes.readUInt8(5)}`);
  let at = 6;
  const take = (): Buffer => {
    if (at + 4 > bytes.length) throw new Error(`truncated at byte ${at}`);
    const len = bytes.readUInt32LE(at);
    if (at + 4 + len > bytes.length) throw new Error(`length ${len} at byte ${at} runs past the end`);
    const out = bytes.subarray(at + 4, at + 4 + len);
    at += 4 + len;
    return out;
  };
  const localEtag = take().toString('utf8');
  if (at + 4 > bytes.length) throw new Error(`truncated at byte ${at}`);
  const count = bytes.readUInt32LE(at);
  if (count > MAX_VARIANTS) throw new Error(`${count} variants`);
  at += 4;
  const variants: DocumentVariant[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 2 > bytes.length) throw new Error(`truncated at byte ${at}`);
    const format = FORMATS[bytes.readUInt8(at)];
    const encoding = ENCODINGS[bytes.readUInt8(at + 1)];
    if (format === undefined || encoding === undefined) throw new Error(`unknown format or encoding at byte ${at}`);
    at += 2;
    const etag = take().toString('utf8');
    const contentType = take().toString('utf8');
    variants.push({ format, encoding, etag, contentType, body: take() });
  }
  if (at !== bytes.length) throw new Error(`${bytes.length - at} bytes after the last variant`);
  return { kind, ...(localEtag ? { localEtag } : {}), variants };
}
